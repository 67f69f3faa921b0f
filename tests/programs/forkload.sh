#!/usr/bin/env bash
# Forks under load (tests/programs/forkload.c): a worker thread running
# the shadow-checked workload (tests/programs/faults/shadow.h), threads
# exiting with their caches, a library dlopen'ed with allocating fork handlers (ATFORK_MODE b:
# its prepare handler mallocs 2 MiB), while the main thread forks, execs,
# vforks and posix_spawns; every child checks its calloc bytes zero and
# the blocks it inherited intact. (One worker: the main thread, sharing 2
# cores with it, the thread churn and the library's own threads, makes
# about 15 children a second here.) hugezero runs FORKS (default 2000) with
# its background zeroer, the A/B arms and the report thread on, and 400 in
# hardened mode; glibc and the peers (where installed) 200 each, so a
# failure of the case itself shows. Each run under a deadline: a hang
# fails.
# Usage: forkload.sh LIB FORKLOAD ATFORK_LIB [FORKS]
set -u
lib=$1 prog=$2 atfork=$3 forks=${4:-2000}
. "$(dirname "$0")/../util/common.sh"
ulimit -c 0
L=/usr/lib/x86_64-linux-gnu
mkdir -p "$work/stats"

# run NAME TIMEOUT FORKS counted|shown ENV...: a peer's failure is shown,
# not counted (mimalloc 2.0.9 misaligns posix_memalign(512) now and then).
run() {
	local name=$1 to=$2 n=$3 how=$4 out rc t0=$SECONDS verdict
	shift 4
	out=$(env ATFORK_MODE=b "$@" timeout -k 5 "$to" "$prog" "$n" 1 "$atfork" 2>&1)
	rc=$?
	if [ $rc = 0 ]; then
		ok "$name: $(echo "$out" | tail -1) in $((SECONDS - t0)) s"
		return
	elif [ $rc = 124 ]; then
		verdict="no end in $to s: $(echo "$out" | tail -2 | tr '\n' ' ')"
	else
		verdict="exit $rc: $(echo "$out" | tail -3 | tr '\n' ' ')"
	fi
	if [ "$how" = counted ]; then bad "$name: $verdict"; else echo "peer - $name: $verdict"; fi
}
run "glibc, 200 forks" 300 200 counted
for a in jemalloc mimalloc tcmalloc_minimal; do
	case $a in jemalloc | mimalloc) so=$L/lib$a.so.2 ;; *) so=$L/lib$a.so.4 ;; esac
	[ -e "$so" ] && run "$a, 200 forks" 300 200 shown LD_PRELOAD="$so"
done
run "hugezero, $forks forks, zeroer, A/B arms, report thread" 900 "$forks" counted LD_PRELOAD="$lib" \
	HUGEZERO_AB=0.5 HUGEZERO_STATS="$work/stats/s.%p" HUGEZERO_STATS_INTERVAL_MS=100
run "hugezero hardened, 400 forks" 300 400 counted LD_PRELOAD="$lib" HUGEZERO_HARDENED=1
finish
