#!/usr/bin/env bash
# Makes a private copy of jemalloc's static archive: every global symbol it
# defines gets the prefix hz_je_, references included, so it can be linked
# beside hugezero's own malloc (in libhugezero.so and libhugezero.a) without
# a clash, and the program never binds to it.
# Usage: jemalloc-rename.sh IN.a OUT.a [NM] [OBJCOPY] [AR]
set -eu
in=$1 out=$2 nm=${3:-nm} objcopy=${4:-objcopy} ar=${5:-ar}
map=$out.syms
"$nm" -g --defined-only "$in" 2>/dev/null |
	awk 'NF == 3 && !seen[$3]++ { print $3, "hz_je_" $3 }' >"$map"
# Its own memset calls go to hugezero's entry for them (preload/memset.c):
# the kernels' figures count them, the program's memset figures do not.
echo "memset hz_je_memset" >>"$map"
# Its fork handlers are run by hugezero's, in their place (allocator/small_fork.c).
echo "pthread_atfork hz_je_pthread_atfork" >>"$map"
# Its MADV_DONTNEED only where a purge was asked for (allocator/small_purge.c).
echo "madvise hz_je_madvise" >>"$map"
# Its profiling's log, exp, round and unwinder are hugezero's
# (allocator/small_libs.c): no libm, no libgcc_s.
echo "log hz_je_log" >>"$map"
echo "exp hz_je_exp" >>"$map"
echo "round hz_je_round" >>"$map"
echo "_Unwind_Backtrace hz_je_unwind_backtrace" >>"$map"
echo "_Unwind_GetIP hz_je_unwind_getip" >>"$map"
# Never empty: jemalloc defines mallocx at least.
grep -q '^mallocx ' "$map"
# Its constructor, which starts it as the library loads, is dropped: the
# library starts it at its own start (hz_small_start) when its small
# engine is jemalloc, and never where the next allocator serves them
# (under an address-space limit its first mappings cost 8 MiB).
"$objcopy" --redefine-syms="$map" --remove-section=.init_array --remove-section=.rela.init_array \
	"$in" "$out.tmp"
mv "$out.tmp" "$out"
# The zeroed data of the object that holds jemalloc's radix-tree root
# (je_arena_emap_global, 2 MiB of the library's image) goes to a section
# of its own, hz_je_tables, read-only, whose bounds the linker gives as
# __start_hz_je_tables and __stop_hz_je_tables. libhugezero.so's link puts
# it in a segment of its own (preload/tables.ld); the library makes its
# pages writable before jemalloc starts, or gives them back where jemalloc
# is never started (allocator/small.c). Linked from libhugezero.a, the
# section joins the program's writable data.
member=$("$nm" -A --defined-only "$in" 2>/dev/null |
	awk '$NF == "je_arena_emap_global" && $(NF-1) ~ /^[bB]$/ { n = split($1, f, ":"); print f[n-1]; exit }')
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -n "$member" ]; then
	(cd "$dir" && "$ar" x "$out" "$member" &&
		"$objcopy" --rename-section .bss=hz_je_tables,alloc,readonly "$member" &&
		"$ar" r "$out" "$member")
fi
# The thread caches' calls of arena_decay go to hz_je_tcache_decay
# (allocator/small_purge.c), which never purges all: a thread's exit
# leaves its arena's free pages to the decay, as the arena's other
# threads would, rather than free each extent (a madvise each) because
# it was the arena's last thread.
member=$("$nm" -A --defined-only "$in" 2>/dev/null |
	awk '$NF == "je_tcache_cleanup" { n = split($1, f, ":"); print f[n-1]; exit }')
[ -n "$member" ] || { echo "jemalloc-rename.sh: no object defines je_tcache_cleanup" >&2; exit 1; }
(cd "$dir" && "$ar" x "$out" "$member" &&
	"$objcopy" --redefine-sym hz_je_je_arena_decay=hz_je_tcache_decay "$member" &&
	"$ar" r "$out" "$member")
# A jemalloc whose thread caches no longer call arena_decay (not 5.x):
# said, not built over silently.
"$nm" "$dir/$member" | grep -q ' U hz_je_tcache_decay$' ||
	{ echo "jemalloc-rename.sh: $member calls no arena_decay (jemalloc 5.x expected)" >&2; exit 1; }
