#!/usr/bin/env bash
# The arenas' release as the kernel sees it (tests/programs/release.c):
# 256 free blocks of 2 MiB and a malloc_trim go back in a handful of
# system calls, counted by strace (one batch for many blocks, never one
# call a block), and every page of them is released; the blocks taken
# again by calloc read zero. Free memory kept for reuse is one budget for
# the process, however many arenas its threads use, and a thread's exit
# releases nothing the next thread takes again. Each case runs under
# glibc first: the case, not the library, is what is tested.
# Usage: release.sh LIB RELEASE_BINARY
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../util/common.sh"
command -v strace >/dev/null || { echo "skip: no strace (scripts/deps.sh installs it)"; exit 77; }

# The MADV_DONTNEED calls (madvise or process_madvise, any thread) made
# between the program's two getppid() calls.
releases() { # TRACE
	awk '/getppid\(/ { m++; next } m == 1 && /MADV_DONTNEED/ && !/resumed>/ { n++ } END { print n + 0 }' "$1"
}

for who in glibc hugezero; do
	pre=; [ $who = hugezero ] && pre=$lib
	if ! kb=$(strace -f -qq -o "$work/$who.trace" -e trace=madvise,process_madvise,getppid \
		env LD_PRELOAD=$pre "$prog" purge 256 2>"$work/err"); then
		bad "$who: 256 blocks freed and trimmed: $(cat "$work/err")"
		continue
	fi
	n=$(releases "$work/$who.trace")
	# After the trim nothing of the 512 MiB is resident (under 32 MiB:
	# the program, its libraries and the arenas' metadata).
	if [ "$kb" -lt 32768 ]; then ok "$who: after the trim ${kb} kB resident"; else bad "$who: after the trim ${kb} kB resident"; fi
	if [ $who = hugezero ]; then
		# One process_madvise per batch: at most 8 for 256 blocks (the
		# budget's passes while they are freed, then the trim's).
		if [ "$n" -ge 1 ] && [ "$n" -le 8 ]; then ok "$who: 256 blocks released in $n calls"
		else bad "$who: 256 blocks released in $n calls (at most 8)"; fi
	fi
done

# One budget for the process: four threads (four arenas) each free 128 MiB;
# what stays resident is at most the budget, not four of them.
for who in glibc hugezero; do
	pre=; [ $who = hugezero ] && pre=$lib
	if ! out=$(env LD_PRELOAD=$pre HUGEZERO_DIRTY_MAX=64M HUGEZERO_RESERVE=0 "$prog" threads 4 64 2>&1); then
		bad "$who: four threads' blocks: $out"
		continue
	fi
	read -r after before <<<"$out"
	kept=$(( (after - before) / 1024 ))
	# The budget, and 16 MiB for the threads' stacks and metadata.
	if [ "$kept" -le $((64 + 16)) ]; then ok "$who: four arenas keep $kept MiB (budget 64 MiB)"
	else bad "$who: four arenas keep $kept MiB (budget 64 MiB for the process)"; fi
done
# Threads that come and go: each generation's arenas are the next one's,
# their free pages kept, not released when the last thread of an arena
# exits and faulted in again (the embedded jemalloc's purge at a thread's
# exit). Nine generations after the first fault in less than one did;
# the exits free no extent lazily, one MADV_FREE each (at most 10 in all);
# and a malloc_trim after the last gives their pages back (all but 8 MiB
# of what the generations left resident).
for who in glibc hugezero; do
	pre=; [ $who = hugezero ] && pre=$lib
	if ! out=$(strace -f -qq -o "$work/gen-$who.trace" -e trace=madvise,getppid \
		env LD_PRELOAD=$pre "$prog" generations 10 2>&1); then
		bad "$who: ten generations of threads: $out"
		continue
	fi
	read -r first later base trimmed <<<"$out"
	calls=$(awk '/getppid\(/ { m++; next } m == 1 && /MADV_FREE/ && !/resumed>/ { n++ } END { print n + 0 }' "$work/gen-$who.trace")
	left=$(( (trimmed - base) / 1024 ))
	if [ $who = glibc ]; then
		ok "$who: ten generations of threads ($first faults, then $later; $calls MADV_FREE; $left MiB after the trim)"
		continue
	fi
	if [ "$later" -lt "$first" ]; then ok "$who: nine generations after the first: $later faults (the first $first)"
	else bad "$who: nine generations after the first: $later faults (the first $first): arenas released at thread exit"; fi
	if [ "$calls" -le 10 ]; then ok "$who: ten generations freed lazily in $calls calls"
	else bad "$who: ten generations freed lazily in $calls calls (at most 10: one a free extent at each exit?)"; fi
	if [ "$left" -le 8 ]; then ok "$who: $left MiB resident after the trim"
	else bad "$who: $left MiB resident after the trim (the exited threads' pages not reached)"; fi
done
finish
