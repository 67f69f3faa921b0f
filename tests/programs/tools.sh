#!/usr/bin/env bash
# Tools beside the library, as docs/production.md says they work: valgrind's
# memcheck, with the library preloaded, finds a read after free and a leak
# as it does without it (the control); jemalloc's heap profiling
# (MALLOC_CONF) writes a profile at exit. Skips (77) without valgrind.
# Usage: tools.sh LIB MISUSE_BINARY
set -u
lib=$1 misuse=$2
. "$(dirname "$0")/../util/common.sh"
if ! command -v valgrind >/dev/null; then
	echo "SKIP - valgrind is not installed (scripts/deps.sh installs it)"
	exit 77
fi
for who in glibc hugezero; do
	pre=
	[ $who = hugezero ] && pre=$lib
	env ${pre:+LD_PRELOAD=$pre} valgrind --leak-check=full "$misuse" >/dev/null 2>"$work/vg.$who"
	if grep -q "Invalid read of size 1" "$work/vg.$who" &&
		grep -q "100 bytes in 1 blocks are definitely lost" "$work/vg.$who"; then
		ok "valgrind under $who: the read after free and the leak found"
	else
		bad "valgrind under $who: $(grep -E 'Invalid|lost|ERROR' "$work/vg.$who" | head -5)"
	fi
done
MALLOC_CONF=prof:true,prof_final:true,prof_prefix:$work/jeprof LD_PRELOAD=$lib /bin/ls / >/dev/null 2>"$work/prof.err"
if ls "$work"/jeprof.*.heap >/dev/null 2>&1 && grep -q "^heap_v2/" "$work"/jeprof.*.heap; then
	ok "MALLOC_CONF heap profiling: $(basename "$(ls "$work"/jeprof.*.heap | head -1)") written at exit"
else
	bad "no heap profile: $(cat "$work/prof.err")"
fi
finish
