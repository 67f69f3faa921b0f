#!/usr/bin/env bash
# The background zeroer in real processes (tests/programs/zeroer.c): no
# live block changed and every calloc zero while it races 8 threads; fork
# while it clears; exit while it clears returns at once; small allocations
# start no thread; the reserve within its limit and decayed; with
# SCHED_IDLE refused it falls back to nice 19, counted;
# HUGEZERO_BACKGROUND=0 starts none.
# Usage: zeroer.sh LIB ZEROER_BINARY
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../util/common.sh"

run() { # name, then the command's arguments
	local name=$1
	shift
	if out=$(LD_PRELOAD=$lib "$@" 2>&1); then ok "$name"; else bad "$name: $out"; fi
}

run "stress: every calloc zero, no live byte changed, 8 threads, 6 s" "$prog" stress 6
run "stress with calloc releasing dirty pages (MADV_DONTNEED)" env HUGEZERO_CALLOC_DIRTY=release "$prog" stress 2
run "fork while clearing: the child's calloc is zero, it has no zeroer until it needs one" "$prog" fork 20
run "small allocations only: no thread" "$prog" small
run "the reserve: found in memory, within its limit, gone after the decay, the idle thread ended" \
	env HUGEZERO_RESERVE=16M HUGEZERO_DIRTY_DECAY_MS=300 "$prog" reserve
run "the reserve waits while the program faults, and fills once it idles" \
	env HUGEZERO_RESERVE=16M "$prog" faulting
run "the reserve stops when what it populated is released unused" \
	env HUGEZERO_RESERVE=16M "$prog" unpaid
run "no reserve to fill: the zeroer does not poll a faulting program" \
	env HUGEZERO_RESERVE=0 "$prog" quiet
run "page faults not countable (getrusage refused): no population, no polling" \
	env HUGEZERO_RESERVE=16M "$prog" blind
run "SCHED_IDLE refused by seccomp: nice 19, the fallback counted" "$prog" seccomp

# exit mid-clear: 1 GiB dirty (the budget raised so none of it is purged).
if t=$(HUGEZERO_DIRTY_MAX=2G LD_PRELOAD=$lib "$prog" exit 2>"$work/err"); then
	late=$(/usr/bin/python3 -c 'import sys, time; print("%.3f" % (time.monotonic() - float(sys.argv[1])))' "$t")
	if /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 0.5)' "$late"; then
		ok "exit while 1 GiB is being cleared: gone ${late} s after exit began"
	else
		bad "exit while clearing took ${late} s"
	fi
else
	bad "exit: $(cat "$work/err")"
fi

# Off: no thread, nothing pre-cleared.
if HUGEZERO_BACKGROUND=0 HUGEZERO_STATS="$work/off.txt" LD_PRELOAD=$lib "$prog" fork 1 2>"$work/err" &&
	grep -qx 'background.starts 0' "$work"/off.txt.* && grep -qx 'background.cleared_bytes 0' "$work"/off.txt.*; then
	ok "HUGEZERO_BACKGROUND=0: no zeroer"
else
	bad "HUGEZERO_BACKGROUND=0: $(cat "$work/err") $(grep background "$work"/off.txt.* 2>/dev/null | head -3)"
fi
finish
