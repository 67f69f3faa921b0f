#!/usr/bin/env bash
# The kernels and the front ends must never call memset (the compiler may
# turn a fill loop into one, and memset may be this library): their objects
# in the engine's archive must not reference it.
# Usage: [NM=cross-nm] no_libcalls.sh LIBHZCORE_A
set -u
pass=0 fail=0
for obj in fill_c.c.o front.c.o kernels.c.o dispatch.c.o; do
	refs=$(${NM:-nm} -u "$1" 2>/dev/null | awk -v o="$obj" '/:$/ { cur = ($0 ~ o ":") } cur && /U / { print $2 }' |
		grep -E '^(memset|memcpy|memmove|__memset_chk|bzero)$')
	if [ -z "$refs" ]; then pass=$((pass + 1)); echo "ok   - $obj calls no memset"
	else fail=$((fail + 1)); echo "FAIL - $obj references: $refs"; fi
done
# The check can fail: the archive must list the objects it looks at.
for obj in fill_c.c.o front.c.o kernels.c.o dispatch.c.o; do
	${NM:-nm} "$1" 2>/dev/null | grep -q "^$obj:$" || { fail=$((fail + 1)); echo "FAIL - $obj not in $1"; }
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
