#!/usr/bin/env bash
# Fault injection: the shadow-checked workload (faultload, shadow.h) under
# the fault shim (libfaultshim.so, preloaded before the allocator), which
# fails some of the allocator's mmap, mremap, madvise, process_madvise,
# pidfd_open, open, sbrk, getrandom, pthread_create, sched_setscheduler
# and mprotect calls with the errno the kernel gives when short of
# something. Under glibc (no allocator preloaded), jemalloc, mimalloc,
# tcmalloc and hugezero: a run without faults, 5 seeds x 2 rates (per
# mille of the intercepted calls), one failing only mmap (a fifth), and
# with the background thread on (hugezero's
# HUGEZERO_BACKGROUND=1, jemalloc's background_thread:true) and, for
# hugezero, off (HUGEZERO_BACKGROUND=0). Each run must exit 0 within 60 s:
# no calloc byte non-zero, no block changed, every NULL with ENOMEM, every
# forked child exiting 0. A table of every run; only hugezero's count
# (and that the shim did inject into them), the others are printed for
# comparison. glibc's malloc calls its own internal mmap and sbrk, which no
# shim reaches: its rows fail only pthread_create. ~50 s on 2 CPUs.
# Faults begin once every thread of the workload has made its first
# allocation (FAULT_ARM): jemalloc 5.3.0, Debian's and the one hugezero
# embeds alike, crashes when the mmap of a new thread's arena fails (a
# NULL arena in tsd_tcache_data_init) or its first mmap at start does
# (pages_boot); those are jemalloc's, left to it. Every later call of the
# program, of its forked children and of the allocators' own threads can
# fail.
# Usage: faults.sh LIBHUGEZERO BINDIR (libfaultshim.so and faultload)
# Environment: FAULTS_ITERS (450 per thread), FAULTS_JOBS (2 at a time).
set -u
lib=$1 bin=$2
. "$(dirname "$0")/../../util/common.sh"
shim=$bin/libfaultshim.so prog=$bin/faultload
iters=${FAULTS_ITERS:-450} threads=3 jobs=${FAULTS_JOBS:-2}
seeds="1 2 3 4 5" rates="20 150" after=0
multi=/usr/lib/x86_64-linux-gnu
declare -A path=([glibc]="" [jemalloc]=$multi/libjemalloc.so.2 [mimalloc]=$multi/libmimalloc.so.2
	[tcmalloc]=$multi/libtcmalloc_minimal.so.4 [hugezero]=$lib)
allocs="glibc jemalloc mimalloc tcmalloc hugezero"

# One run: NAME VARIANT SEED RATE AFTER [VAR=VALUE...]; its results in
# $work/N.{out,err,res}.
runs=()
have() { [ "$1" = glibc ] || [ -e "${path[$1]}" ]; }
add() { if have "$1"; then runs+=("$*"); fi; }
for a in $allocs; do
	have "$a" || echo "# $a: ${path[$a]} missing, not run"
	add "$a" - 1 0 0
	for s in $seeds; do
		for r in $rates; do add "$a" - "$s" "$r" "$after"; done
	done
	add "$a" mmap-only 8 200 0 FAULT_KINDS=mmap
done
add jemalloc bg=on 7 150 "$after" MALLOC_CONF=background_thread:true
add hugezero bg=1 7 150 "$after" HUGEZERO_BACKGROUND=1
add hugezero bg=0 7 150 "$after" HUGEZERO_BACKGROUND=0

run_one() { # index, then the run's words
	local i=$1 a=$2 variant=$3 s=$4 r=$5 aft=$6
	shift 6
	local pre=$shim
	[ -n "${path[$a]}" ] && pre="$shim:${path[$a]}"
	local t0 t1 rc
	t0=$(date +%s.%N)
	timeout -k 5 60 env "$@" FAULT_ARM=1 FAULT_SEED="$s" FAULT_RATE="$r" FAULT_AFTER="$aft" FAULT_VERBOSE=1 \
		LD_PRELOAD="$pre" "$prog" "$iters" "$threads" "$s" >"$work/$i.out" 2>"$work/$i.err"
	rc=$?
	t1=$(date +%s.%N)
	echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >"$work/$i.res"
}

for i in "${!runs[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	# shellcheck disable=SC2086
	run_one "$i" ${runs[$i]} 2>/dev/null & # (bash's "Segmentation fault" line: the table says it)
done
wait

verdict() { # rc: ok, or what went wrong
	case $1 in
	0) echo ok ;;
	124 | 137) echo "hang (timeout 60 s)" ;;
	1) echo "error (exit 1)" ;;
	*) if [ "$1" -gt 128 ]; then echo "signal $(($1 - 128)) ($(kill -l $(($1 - 128)) 2>/dev/null))"; else echo "exit $1"; fi ;;
	esac
}

faulted() { # the shim's line: the kinds with a fault, "mmap 3 dontneed 1 ..."
	awk '{ sub(/^[^:]*: */, ""); n = split($0, w, " ")
		for (i = 1; i < n; i += 2) { split(w[i + 1], c, "/"); if (c[2] > 0) printf "%s %s ", w[i], c[2] } }' <<<"$1"
}

total_faults=0
printf '%-9s %-10s %4s %4s %5s  %-20s %5s %6s %5s %s\n' allocator variant seed rate after result secs ops nulls "faults/calls (injected per kind)"
for i in "${!runs[@]}"; do
	# shellcheck disable=SC2086
	set -- ${runs[$i]}
	a=$1 variant=$2 s=$3 r=$4 aft=$5
	shift 5
	read -r rc secs <"$work/$i.res"
	v=$(verdict "$rc")
	ops=$(sed -n 's/^faultload ops \([0-9]*\) nulls \([0-9]*\).*/\1/p' "$work/$i.err")
	nulls=$(sed -n 's/^faultload ops [0-9]* nulls \([0-9]*\).*/\1/p' "$work/$i.err")
	shimline=$(grep -m1 '^faultshim:' "$work/$i.err")
	calls=$(sed -n 's/.* calls \([0-9]*\) faults \([0-9]*\):.*/\1/p' <<<"$shimline")
	faults=$(sed -n 's/.* calls \([0-9]*\) faults \([0-9]*\):.*/\2/p' <<<"$shimline")
	# the kinds with a fault: "mmap 3 dontneed 1 ..."
	kinds=$(faulted "$shimline")
	printf '%-9s %-10s %4s %4s %5s  %-20s %5s %6s %5s %s\n' "$a" "$variant" "$s" "$r" "$aft" "$v" "$secs" \
		"${ops:--}" "${nulls:--}" "${faults:--}/${calls:--} ${kinds}"
	msg=$(grep -v -e '^faultshim:' -e '^faultload ops' "$work/$i.err" | head -3 | cut -c1-600)
	[ -n "$msg" ] && [ "$rc" -ne 0 ] && sed 's/^/      | /' <<<"$msg"
	[ "$a" = hugezero ] || continue
	total_faults=$((total_faults + ${faults:-0}))
	echo "$kinds" >>"$work/kinds"
	pre="$shim:$lib"
	repro="$* FAULT_ARM=1 FAULT_SEED=$s FAULT_RATE=$r FAULT_AFTER=$aft LD_PRELOAD=$pre $prog $iters $threads $s"
	name=hugezero
	[ "$variant" = - ] || name="$name $variant"
	name="$name seed $s rate $r/1000 after $aft (${faults:-?} faults, ${nulls:-?} NULLs)"
	if [ "$rc" -eq 0 ]; then
		ok "$name"
	else
		detail=$(head -c 400 <<<"${msg:-no message, no report from the shim}" | tr '\n' ' ')
		bad "$name: $v: $detail-- to reproduce (FAULT_VERBOSE=2 names each fault's caller): $repro"
	fi
done
# Refused at the start, before any block (not armed): hugezero's
# mprotect that makes jemalloc's tables writable. The next allocator then
# serves the small blocks, and the workload passes as in any run.
out=$(FAULT_KINDS=mprotect FAULT_RATE=1000 FAULT_VERBOSE=1 LD_PRELOAD="$shim:$lib" timeout -k 5 60 \
	"$prog" 100 2 1 2>&1)
rc=$?
shimline=$(grep -m1 '^faultshim:' <<<"$out")
if [ $rc = 0 ] && [[ $shimline =~ mprotect\ [0-9]+/[1-9] ]]; then
	ok "hugezero with jemalloc's tables refused at the start: $shimline"
else
	bad "hugezero with jemalloc's tables refused at the start: exit $rc: $(head -c 400 <<<"$out" | tr '\n' ' ')"
fi

# The runs above test nothing if the shim failed nothing.
per_kind=$(awk '{ for (i = 1; i < NF; i += 2) s[$i] += $(i + 1) }
	END { for (k in s) printf "%s %d, ", k, s[k] }' "$work/kinds" 2>/dev/null)
if [ "$total_faults" -gt 0 ]; then
	ok "the shim failed $total_faults of hugezero's calls: ${per_kind%, }"
else
	bad "the shim failed none of hugezero's calls"
fi
finish
