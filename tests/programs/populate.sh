#!/usr/bin/env bash
# Fresh blocks populated where the program touches them
# (tests/programs/populate.c): learnt from freed blocks and from blocks
# kept, never for sparse ones, as HUGEZERO_POPULATE says, over helpers
# from 64 MiB, and never after a free. Small fresh pages (HUGEZERO_FRESH=
# small) and huge ones. The same pattern under glibc first: the case, not
# the library, is what runs. Where the helpers' cases cannot run (see
# below), the rest runs and the test counts as skipped (77).
# Usage: populate.sh LIB POPULATE_BINARY
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../util/common.sh"

if out=$("$prog" glibc 2>&1); then ok "glibc: the pattern runs, every calloc zero"; else bad "glibc: $out"; fi
"$prog" on >/dev/null 2>&1
[ $? = 77 ] && { echo "skip: the kernel cannot populate (MADV_POPULATE_WRITE, Linux 5.14)"; exit 77; }
# No reserve: the zeroer's population of free pages would be read as ours.
for fresh in small huge; do
	preloaded "$fresh pages: learnt from freed dense blocks, populated before the touch" \
		env HUGEZERO_FRESH=$fresh HUGEZERO_RESERVE=0 "$prog" learn
	preloaded "$fresh pages: learnt from blocks never freed (read 10 ms on)" \
		env HUGEZERO_FRESH=$fresh HUGEZERO_RESERVE=0 "$prog" kept
done
for fresh in small auto; do
	preloaded "$fresh pages: sparse blocks never populated" env HUGEZERO_FRESH=$fresh HUGEZERO_RESERVE=0 "$prog" sparse
done
preloaded "HUGEZERO_POPULATE=0: none populated" env HUGEZERO_POPULATE=0 HUGEZERO_RESERVE=0 "$prog" off
preloaded "HUGEZERO_POPULATE=1: the first block populated" env HUGEZERO_POPULATE=1 HUGEZERO_RESERVE=0 "$prog" on
# The helpers' cases: they take work only while /proc/loadavg shows fewer
# runnable threads than CPUs, which a busy CI host seldom does. Each runs
# in a private mount namespace whose /proc/loadavg says a core is idle
# (root), the program giving its helpers SCHED_FIFO on a CPU of their own
# (populate.c), no zeroer beside them; each fails where no helper took
# part. Without root, unshare or two CPUs they are not run, and not
# counted as passed.
idle=$work/loadavg
echo "0.00 0.00 0.00 1/100 1" >"$idle"
on_idle_core() { # COMMAND...: run where /proc/loadavg shows an idle core
	unshare -m --propagation private sh -c 'mount --bind "$0" /proc/loadavg && exec "$@"' "$idle" "$@"
}
if [ "$(id -u)" != 0 ]; then
	why="needs root"
elif [ "$(nproc)" -lt 2 ]; then
	why="needs two CPUs"
elif ! on_idle_core grep -qx "0.00 0.00 0.00 1/100 1" /proc/loadavg 2>/dev/null; then
	why="no private mount namespace (unshare -m)"
else
	why=
fi
idle_case() { # NAME COMMAND...: preloaded, where a core shows idle
	local name=$1 out
	shift
	if out=$(on_idle_core env LD_PRELOAD="$lib" HUGEZERO_BACKGROUND=0 "$@" 2>&1); then ok "$name"; else bad "$name: $out"; fi
}
helped() { # NAME COMMAND...
	if [ -n "$why" ]; then echo "skip - $1: $why"; else idle_case "$@"; fi
}
helped "256 MiB over a helper (HUGEZERO_THREADS=2)" env HUGEZERO_POPULATE=1 HUGEZERO_THREADS=2 "$prog" helpers
helped "memsets of 192 MiB split over a helper after a calloc over it: every byte, nothing around" \
	env HUGEZERO_THREADS=2 "$prog" fill
helped "calloc of a recycled 96 MiB block, its clear split over a helper: every byte zero" \
	env HUGEZERO_THREADS=2 "$prog" recycled
helped "no page populated after the free, a helper populating" \
	env HUGEZERO_POPULATE=1 HUGEZERO_THREADS=2 "$prog" freed
if [ -n "$why" ]; then
	preloaded "HUGEZERO_THREADS=1: no helper" env HUGEZERO_THREADS=1 HUGEZERO_POPULATE=1 "$prog" nohelpers
else
	idle_case "HUGEZERO_THREADS=1: no helper, a core idle all the same" \
		env HUGEZERO_THREADS=1 HUGEZERO_POPULATE=1 "$prog" nohelpers
fi

# A memory cgroup of 40 MiB (root, cgroup v1's memory controller): a 32
# MiB block fits, but within a quarter of the limit: not populated. glibc
# runs the same blocks there.
cur=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup 2>/dev/null)
cg=/sys/fs/cgroup/memory${cur%/}/hz_populate_$$
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/memory ] && mkdir "$cg" 2>/dev/null; then
	echo $((40 << 20)) >"$cg/memory.limit_in_bytes"
	in_group() { sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"; }
	if out=$(in_group "$prog" glibc 4 2>&1); then ok "cgroup: glibc runs the blocks"; else bad "cgroup, glibc: $out"; fi
	preloaded "cgroup near its limit: no block populated" in_group env HUGEZERO_RESERVE=0 "$prog" pressed
	rmdir "$cg"
else
	echo "skip: memory cgroup (needs root and cgroup v1's memory controller)"
fi

# The system's THP set to never (root; the setting restored at exit; the
# test runs alone): every fresh page small, populated all the same.
thp=/sys/kernel/mm/transparent_hugepage/enabled
if [ "$(id -u)" = 0 ] && [ -w $thp ]; then
	was=$(sed 's/.*\[\(.*\)\].*/\1/' $thp)
	trap 'echo "$was" >'$thp'; rm -rf "$work"' EXIT
	if echo never >$thp 2>/dev/null; then
		preloaded "THP never: learnt from freed dense blocks, populated" env HUGEZERO_RESERVE=0 "$prog" learn
		preloaded "THP never: sparse blocks never populated" env HUGEZERO_RESERVE=0 "$prog" sparse
	fi
	echo "$was" >$thp
else
	echo "skip: THP never (needs root and $thp)"
fi
finish || exit 1
[ -z "$why" ] || { echo "skip: the helpers' cases ($why)"; exit 77; }
