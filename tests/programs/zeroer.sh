#!/usr/bin/env bash
# The background zeroer in real processes (tests/programs/zeroer.c): no
# live block changed and every calloc zero while it races 8 threads; fork
# while it clears; exit while it clears returns at once, also with every
# core busy; small allocations
# start no thread; the reserve within its limit and the program's peak,
# and decayed; a block freed and taken again at once left to the
# program, and not looked at again on each such free; a block kept whole
# at its free released by the decay; with
# SCHED_IDLE refused it falls back to nice 19, counted;
# HUGEZERO_BACKGROUND=0 starts none.
# Usage: zeroer.sh LIB ZEROER_BINARY
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../util/common.sh"

preloaded "stress: every calloc zero, no live byte changed, 8 threads, 6 s" "$prog" stress 6
preloaded "stress with calloc releasing dirty pages (MADV_DONTNEED)" env HUGEZERO_CALLOC_DIRTY=release "$prog" stress 2
preloaded "fork while clearing: the child's calloc is zero, it has no zeroer until it needs one" "$prog" fork 20
preloaded "small allocations only: no thread" "$prog" small
preloaded "the reserve (below the program's peak): found in memory, within its limit, gone after the decay, the idle thread ended" \
	env HUGEZERO_RESERVE=16M HUGEZERO_DIRTY_DECAY_MS=300 "$prog" reserve
# Small fresh pages: on huge ones the first MiB's touch brings in its
# whole huge page, which the zeroer then rightly clears.
# VmRSS and VmHWM, which bound the reserve, come after the Groups line of
# /proc/self/status: kilobytes long in a process of 2000 groups.
if [ "$(id -u)" = 0 ]; then
	preloaded "the reserve in a process of 2000 groups (its status past 8 KiB)" \
		env HUGEZERO_RESERVE=16M HUGEZERO_DIRTY_DECAY_MS=300 /usr/bin/python3 -c \
		'import os, sys; os.setgroups(range(100000, 102000)); os.execv(sys.argv[1], [sys.argv[1], "reserve"])' "$prog"
else
	echo "skip - the reserve in a process of 2000 groups: setgroups needs root"
fi
preloaded "a freed block written in part: only its pages in memory cleared, the rest left out" \
	env HUGEZERO_FRESH=small HUGEZERO_POPULATE=0 HUGEZERO_RESERVE=0 "$prog" sparse
preloaded "a program that only grows: no reserve above its peak" \
	env HUGEZERO_RESERVE=16M HUGEZERO_DIRTY_DECAY_MS=300 "$prog" peak
preloaded "exec'd from a process of 256 MiB: its peak is no room for the reserve" \
	env HUGEZERO_RESERVE=16M HUGEZERO_DIRTY_DECAY_MS=300 "$prog" peak_exec
# Small fresh pages, so that every touch is a fault (on huge ones, which
# fresh memory's measurement may choose, a fault comes every 2 MiB and the
# reserve rightly fills between them), and no population of the program's
# blocks (populate.c), which would take their faults away. The program and
# the zeroer at SCHED_FIFO (root), so that a busy host neither pauses the
# faults nor starves the zeroer: judged there too, never passed unjudged.
if [ "$(id -u)" = 0 ]; then
	preloaded "the reserve waits while the program faults, and fills once it idles" \
		env HUGEZERO_RESERVE=16M HUGEZERO_FRESH=small HUGEZERO_POPULATE=0 "$prog" faulting
else
	echo "skip - the reserve waits while the program faults: SCHED_FIFO needs root"
fi
preloaded "the reserve stops when what it populated is released unused" \
	env HUGEZERO_RESERVE=16M HUGEZERO_POPULATE=0 "$prog" unpaid
preloaded "no reserve to fill: the zeroer does not poll a faulting program" \
	env HUGEZERO_RESERVE=0 "$prog" quiet
preloaded "a block freed and taken again at once: left to the program, never waited for" \
	"$prog" recycle
preloaded "a block kept whole at its free, then idle: the free starts the zeroer, whose decay releases it" \
	env HUGEZERO_DIRTY_DECAY_MS=300 HUGEZERO_RESERVE=0 "$prog" kept
preloaded "blocks freed and taken again at once, back to back: the zeroer looks again later, not at each free" \
	"$prog" retake
preloaded "page faults not countable (getrusage refused): no population, no polling" \
	env HUGEZERO_RESERVE=16M "$prog" blind
preloaded "SCHED_IDLE refused by seccomp: nice 19, the fallback counted" "$prog" seccomp

# The zeroer's clears are counted with every other clear: 256 MiB set by
# memset and freed dirty, then cleared by the zeroer while the program
# sleeps; the kernels' bytes cover both.
rm -f "$work"/count.*
HUGEZERO_STATS="$work/count" LD_PRELOAD=$lib /usr/bin/python3 -c '
import ctypes, time
c = ctypes.CDLL(None)
c.malloc.restype = ctypes.c_void_p
n = 256 << 20
p = c.malloc(n)
c.memset(ctypes.c_void_p(p), 1, n)
c.free(ctypes.c_void_p(p))
time.sleep(1.5)' 2>"$work/err"
check=$(awk '/^kernel\..*\.bytes /{k += $2} /^memset\.large\.bytes /{m = $2} /^background\.cleared_bytes /{b = $2}
	END {print (b > 0 && k >= m + b) ? "ok" : "kernels " k ", memset " m ", background " b}' "$work"/count.* 2>/dev/null)
if [ "$check" = ok ]; then ok "the zeroer's clears are in the kernels' counts"; else bad "zeroer's clears counted: $check $(cat "$work/err")"; fi

# exit mid-clear: 1 GiB dirty (the budget raised so none of it is
# purged); gone, the process reaped, within 0.5 s of exit. Again with
# every core busy (two spinners per CPU at normal priority): the zeroer,
# starved at SCHED_IDLE, would be the last thread out and tear the
# memory down for seconds, so exit raises it to normal priority (root).
exit_case() { # NAME: Python waits for the program (its own start is not timed)
	local late
	if late=$(HUGEZERO_DIRTY_MAX=2G /usr/bin/python3 -c '
import os, subprocess, sys, time
env = dict(os.environ, LD_PRELOAD=sys.argv[1])
p = subprocess.run(sys.argv[2:], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
end = time.monotonic()
if p.returncode:
    sys.exit(p.stderr.strip() or "exit status %d" % p.returncode)
print("%.3f" % (end - float(p.stdout)))' "$lib" "$prog" exit 2>"$work/err"); then
		if /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 0.5)' "$late"; then
			ok "$1: gone ${late} s after exit began"
		else
			bad "$1: gone ${late} s after exit began"
		fi
	else
		bad "$1: $(cat "$work/err")"
	fi
}
exit_case "exit while 1 GiB is being cleared"
if [ "$(id -u)" = 0 ]; then
	spin=()
	for i in $(seq $((2 * $(nproc)))); do
		(while :; do :; done) &
		spin+=($!)
	done
	exit_case "exit while 1 GiB is being cleared, every core busy"
	kill "${spin[@]}"
	wait "${spin[@]}" 2>/dev/null
else
	echo "skip - exit with every core busy: raising the zeroer back needs root"
fi

# Off: no thread, nothing pre-cleared.
if HUGEZERO_BACKGROUND=0 HUGEZERO_STATS="$work/off.txt" LD_PRELOAD=$lib "$prog" fork 1 2>"$work/err" &&
	grep -qx 'background.starts 0' "$work"/off.txt.* && grep -qx 'background.cleared_bytes 0' "$work"/off.txt.*; then
	ok "HUGEZERO_BACKGROUND=0: no zeroer"
else
	bad "HUGEZERO_BACKGROUND=0: $(cat "$work/err") $(grep background "$work"/off.txt.* 2>/dev/null | head -3)"
fi
finish
