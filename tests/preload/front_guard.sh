#!/usr/bin/env bash
# memset in libhugezero.so is the widest front end behind a flag test: no
# instruction of the wide ISA (ymm/zmm/mask registers, bzhi) may come
# before the first conditional branch, or a CPU without that ISA would
# fault before initialisation could route it elsewhere.
# Usage: front_guard.sh LIBHUGEZERO_SO
set -u
body=$(objdump -d --no-show-raw-insn "$1" | awk '/<memset>:$/ { on = 1; next } on && /^$/ { exit } on')
if [ -z "$body" ]; then echo "FAIL - no memset in $1"; echo "0 passed, 1 failed"; exit 1; fi
before=$(echo "$body" | awk '/\tj[a-z]+ / { exit } { print }')
if ! echo "$before" | grep -q 'hz_memset_widest_ok'; then
	echo "FAIL - memset does not test its flag before its first branch:"; echo "$before"
	echo "0 passed, 1 failed"; exit 1
fi
if echo "$before" | grep -qE '%[yz]mm|%k[0-7]|bzhi|kmov'; then
	echo "FAIL - wide instruction before the guard:"; echo "$before"
	echo "0 passed, 1 failed"; exit 1
fi
echo "ok   - memset tests its flag before any wide instruction:"
echo "$before" | sed 's/^/       /'
echo "1 passed, 0 failed"
