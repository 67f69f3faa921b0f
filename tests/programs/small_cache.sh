#!/usr/bin/env bash
# The small blocks' thread cache (allocator/small_cache.c): small_cache.c's
# cases preloaded, and each under glibc too, so a failure is the library's.
# The cache is there by default and not with HUGEZERO_SMALL_CACHE=0 (so the
# first check can fail), nor under HUGEZERO_SMALL=next, the off mode or
# jemalloc's heap profiling, zeroing, junk filling or its thread caches
# turned off (MALLOC_CONF prof:true, zero:true, junk:..., tcache:false);
# hardened mode runs over it; abi.c's edges of the malloc family hold
# with it. Where the cache makes the threads' jemalloc thread caches
# (MALLOC_CONF and /etc/malloc.conf unset), a thread of few calls makes
# none; with no pthread key for the cache, each thread makes its own at
# its first call; with none for jemalloc, the small blocks are glibc's.
# Usage: small_cache.sh LIB SMALL_CACHE_BINARY ABI_BINARY KEYS_LIB
set -u
lib=$1 prog=$2 abi=$3 keys=$4
unset MALLOC_CONF # the cases set it where they need it
# Where the system's /etc/malloc.conf is set, jemalloc makes the threads'
# caches itself: the cases of the cache's own are skipped.
sysconf_set=0
if [ -e /etc/malloc.conf ] || [ -L /etc/malloc.conf ]; then sysconf_set=1; fi
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

for c in remote exits counts aligned trim fork blocked resize lastround tcaches warm; do
	if [ $c = tcaches ] && [ $sysconf_set = 1 ]; then
		ok "# skipped tcaches: /etc/malloc.conf is set"
		continue
	fi
	if out=$(timeout 300 "$prog" $c 2>&1); then g=ok; else g="failed: $(echo "$out" | tail -2)"; fi
	if out=$(LD_PRELOAD=$lib timeout 300 "$prog" $c 2>&1); then
		ok "$c: $(echo "$out" | grep -v '^ok$' | tr '\n' ' ')(glibc: $g)"
	else
		bad "$c: $(echo "$out" | tail -3 | tr '\n' ' ') (glibc: $g)"
	fi
done
# With MALLOC_CONF set, jemalloc makes every thread's cache, as it says.
if out=$(MALLOC_CONF=tcache:true LD_PRELOAD=$lib timeout 300 "$prog" tcaches_eager 2>&1); then
	ok "MALLOC_CONF set: $(echo "$out" | grep -v '^ok$' | tr '\n' ' ')"
else
	bad "MALLOC_CONF set: $(echo "$out" | tail -3 | tr '\n' ' ')"
fi
# jemalloc's other source of options, /etc/malloc.conf (junk filling),
# with MALLOC_CONF unset: jemalloc makes every thread's cache as before
# (the system's options say what is wanted), and the cache is refused.
# In a mount namespace of its own, where /etc/malloc.conf is made.
if [ $sysconf_set = 0 ] && unshare -m true 2> /dev/null; then
	etc=$(mktemp -d) real=$(mktemp -d)
	trap 'rm -rf "$work" "$etc" "$real"' EXIT
	for f in /etc/* /etc/.[!.]*; do [ -e "$f" ] && ln -s "$real/${f#/etc/}" "$etc/"; done
	ln -s junk:true "$etc/malloc.conf"
	sysconf() { # MODE
		unshare -m sh -c 'mount --make-rprivate / && mount --bind /etc "$1" && mount --bind "$2" /etc &&
			exec env -u MALLOC_CONF LD_PRELOAD="$3" timeout 300 "$4" "$5"' - "$real" "$etc" "$lib" "$prog" "$1" 2>&1
	}
	w=$(sysconf where | head -1)
	if out=$(sysconf tcaches_eager) && [ "$w" = "not cached" ]; then
		ok "/etc/malloc.conf set: a 64 B block $w; $(echo "$out" | grep -v '^ok$' | tr '\n' ' ')"
	else
		bad "/etc/malloc.conf set: a 64 B block $w; $(echo "$out" | tail -3 | tr '\n' ' ')"
	fi
else
	ok "# skipped the /etc/malloc.conf case: it exists, or no mount namespace can be made"
fi
# The cache refused after jemalloc started without thread caches of its
# own: all but KEYS_LEFT pthread keys taken by a library started first
# (keys.c), so that jemalloc's key is made and the cache's exit key is
# not. Each thread makes its jemalloc cache at its first call.
# (With none left, the small blocks are glibc's: below.)
if [ $sysconf_set = 1 ]; then
	ok "# skipped the refused cache: /etc/malloc.conf is set"
else
	passed=0
	for left in 1 2 3; do
		w=$(KEYS_LEFT=$left LD_PRELOAD="$lib $keys" timeout 300 "$prog" where 2>&1 | head -1)
		if out=$(KEYS_LEFT=$left LD_PRELOAD="$lib $keys" timeout 300 "$prog" tcaches_lone 2>&1) &&
			[ "$w" = "not cached" ]; then
			passed=1
			break
		fi
	done
	if [ $passed = 1 ]; then
		ok "no pthread key for the cache ($left left): $(echo "$out" | grep -v '^ok$' | tr '\n' ' ')"
	else
		bad "no pthread key for the cache: a 64 B block $w; $(echo "$out" | tail -3 | tr '\n' ' ')"
	fi
fi
# Every pthread key taken before the allocator starts: jemalloc cannot
# start (its thread data needs one), and the small blocks are the next
# allocator's, glibc's; the malloc family's edges hold, as under glibc.
# jemalloc's interface answers EAGAIN there, at once, from any thread.
g=$(KEYS_LEFT=0 LD_PRELOAD="$keys" timeout 300 "$abi" 2>&1 | tail -1)
w=$(KEYS_LEFT=0 LD_PRELOAD="$lib $keys" timeout 60 "$prog" where 2>&1 | head -1)
c=$(KEYS_LEFT=0 LD_PRELOAD="$lib $keys" timeout 60 "$prog" ctl_refused 2>&1 | tail -1)
if out=$(KEYS_LEFT=0 LD_PRELOAD="$lib $keys" timeout 300 "$abi" 2>&1) && [ "$w" = "not cached" ] && [ "$c" = ok ]; then
	ok "no pthread key left: $(echo "$out" | tail -1), mallctl EAGAIN (glibc: $g)"
else
	bad "no pthread key left: a 64 B block $w, mallctl: $c; $(echo "$out" | grep FAIL | head -3 | tr '\n' ' ') (glibc: $g)"
fi
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
