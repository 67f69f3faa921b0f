#!/usr/bin/env bash
# HUGEZERO_SMALL=next: hugezero's memset, large blocks and arms on top of
# the allocator underneath for small blocks: glibc's own, Debian's
# jemalloc, mimalloc and tcmalloc, each preloaded after the library. Each
# runs small_next.c (routing, realloc across the threshold, usable sizes,
# alignment, zeros, the dynamic linker's allocations, fork under threads)
# and abi.c (the malloc family's edges, threads with shadow copies), which
# must pass whole: its edges are hugezero's (glibc's answers), whatever
# the allocator underneath answers alone (shown beside: Debian's jemalloc,
# mimalloc and tcmalloc fail some of glibc's edges, or crash, on their own).
# Without an allocator after it (libhugezero.a's case too) the option is
# refused by name and the embedded jemalloc serves.
# The allocator is chosen at the start without dlsym: abi.c passes behind
# a library that exits at any dlsym call.
# Usage: small_next.sh LIB SMALL_NEXT_BINARY ABI_BINARY TRAP_DLSYM_LIB
set -u
lib=$1 prog=$2 abi=$3 trap=$4
. "$(dirname "$0")/../util/common.sh"

multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
d=/usr/lib/$multiarch
for under in glibc:libc.so.6 jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4; do
	name=${under%%:*} soname=${under#*:} peer=
	[ "$name" != glibc ] && peer=$d/$soname
	if [ -n "$peer" ] && [ ! -e "$peer" ]; then
		bad "$name: $peer is not installed"
		continue
	fi
	alone=$( (LD_PRELOAD=$peer timeout 300 "$abi" 2>&1 | tail -1) 2>/dev/null)
	alone=${alone:-crashed}
	if out=$(HUGEZERO_SMALL=next LD_PRELOAD="$lib $peer" timeout 300 "$prog" "$soname" 2>&1) && [ "$out" = ok ]; then
		ok "over $name: small blocks its own, realloc across, fork under threads"
	else
		bad "over $name: $out"
	fi
	if out=$(HUGEZERO_SMALL=next LD_PRELOAD="$lib $peer" timeout 300 "$abi" 2>&1); then
		ok "over $name: the malloc family's edges ($(echo "$out" | tail -1); $name alone: $alone)"
	else
		bad "over $name: abi.c: $(echo "$out" | grep FAIL | head -3)"
	fi
done

# Chosen without dlsym, before the allocator has started.
if out=$(HUGEZERO_SMALL=next LD_PRELOAD="$trap:$lib $d/libmimalloc.so.2" timeout 300 "$abi" 2>&1); then
	ok "over mimalloc behind a library that exits at any dlsym call ($(echo "$out" | tail -1))"
else
	bad "over mimalloc, dlsym trapped: $(echo "$out" | tail -3)"
fi
# The default: the embedded jemalloc serves small blocks.
out=$(LD_PRELOAD=$lib "$prog" libc.so.6 2>&1)
case $out in *"embedded jemalloc served"*) ok "default: the embedded jemalloc serves small blocks" ;;
*) bad "default: $out" ;; esac
# A name that is not an engine is refused, by name.
if err=$(HUGEZERO_SMALL=tcmalloc LD_PRELOAD=$lib /bin/true 2>&1) && [[ $err == *"ignoring HUGEZERO_SMALL"* ]]; then
	ok "a bad value is named and ignored"
else
	bad "bad value: $err"
fi
finish
