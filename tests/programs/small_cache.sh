#!/usr/bin/env bash
# The small blocks' thread cache (allocator/small_cache.c): small_cache.c's
# cases preloaded, and each under glibc too, so a failure is the library's.
# The cache is there by default and not with HUGEZERO_SMALL_CACHE=0 (so the
# first check can fail), nor under HUGEZERO_SMALL=next, the off mode or
# jemalloc's heap profiling, zeroing, junk filling or its thread caches
# turned off (MALLOC_CONF prof:true, zero:true, junk:..., tcache:false);
# hardened mode runs over it; abi.c's edges of the malloc family hold
# with it.
# Usage: small_cache.sh LIB SMALL_CACHE_BINARY ABI_BINARY
set -u
lib=$1 prog=$2 abi=$3
. "$(dirname "$0")/../util/common.sh"

where() { # EXPECTED ENV...
	local want=$1 out
	shift
	out=$(env "$@" LD_PRELOAD=$lib "$prog" where 2>&1 | head -1)
	if [ "$out" = "$want" ]; then ok "$* a 64 B block: $out"; else bad "$*: a 64 B block $out, not $want"; fi
}
where cached HUGEZERO_SMALL_CACHE=1
where "not cached" HUGEZERO_SMALL_CACHE=0
where "not cached" HUGEZERO_SMALL=next
where cached HUGEZERO_HARDENED=1
where "not cached" HUGEZERO_MODE=off
where "not cached" MALLOC_CONF=prof:true
where "not cached" MALLOC_CONF=zero:true
where "not cached" MALLOC_CONF=junk:true
where "not cached" MALLOC_CONF=junk:free
where "not cached" MALLOC_CONF=tcache:false
where cached MALLOC_CONF=junk:false,tcache:true

for c in remote exits counts aligned trim fork blocked resize lastround; do
	if out=$(timeout 300 "$prog" $c 2>&1); then g=ok; else g="failed: $(echo "$out" | tail -2)"; fi
	if out=$(LD_PRELOAD=$lib timeout 300 "$prog" $c 2>&1); then
		ok "$c: $(echo "$out" | grep -v '^ok$' | tr '\n' ' ')(glibc: $g)"
	else
		bad "$c: $(echo "$out" | tail -3 | tr '\n' ' ') (glibc: $g)"
	fi
done
for c in remote fork; do
	if out=$(HUGEZERO_HARDENED=1 LD_PRELOAD=$lib timeout 300 "$prog" $c 2>&1); then
		ok "hardened over the cache: $c"
	else
		bad "hardened over the cache: $c: $(echo "$out" | tail -3 | tr '\n' ' ')"
	fi
done
if out=$(LD_PRELOAD=$lib timeout 300 "$abi" 2>&1); then
	ok "the malloc family's edges with the cache: $(echo "$out" | tail -1)"
else
	bad "abi.c with the cache: $(echo "$out" | grep FAIL | head -3)"
fi
finish
