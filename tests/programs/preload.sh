#!/usr/bin/env bash
# The built libhugezero.so preloaded into real programs: their output must
# be identical to a run without it, and the dynamic linker must have bound
# their memset to the library (LD_DEBUG=bindings), so the library was used.
# Usage: preload.sh LIB FORTIFY_BINARY EARLY_BINARY ABI_BINARY JEAPI_BINARY TRAP_DLSYM_LIB CXX_BINARY
set -u
lib=$1 fortify=$2 early=$3 abi=$4 jeapi=$5 trap=$6 cxx=$7
. "$(dirname "$0")/../util/common.sh"

# same NAME CMD...: stdout with and without the library must match, and
# memset must be bound to the library in the preloaded run.
same() {
	local name=$1
	shift
	"$@" >"$work/plain.out" 2>"$work/plain.err"
	local rc_plain=$?
	LD_PRELOAD=$lib LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/bind" "$@" >"$work/hz.out" 2>"$work/hz.err"
	local rc_hz=$?
	if [ $rc_plain -ne $rc_hz ]; then
		bad "$name: exit $rc_hz with the library, $rc_plain without"; return
	fi
	if ! cmp -s "$work/plain.out" "$work/hz.out"; then
		bad "$name: output differs"; return
	fi
	if ! cmp -s "$work/plain.err" "$work/hz.err"; then
		bad "$name: stderr differs: $(head -c 300 "$work/hz.err")"; return
	fi
	for sym in memset malloc; do
		if ! cat "$work"/bind.* 2>/dev/null | grep -q "to $lib .*symbol \`$sym'"; then
			bad "$name: $sym was not bound to the library"; rm -f "$work"/bind.*; return
		fi
	done
	rm -f "$work"/bind.*
	ok "$name ($(wc -c <"$work/hz.out") bytes of identical output)"
}

# bash and ls link libraries with -z now: no loader warning may appear.
same "bash and ls, stderr included" bash -c 'ls -la /usr/lib | wc -l; ls /nonexistent-hugezero'
same "shell pipeline" sh -c 'seq 1 300000 | awk "{ print \$1 * 7 % 1000, \$1 }" | sort -n -k1,1 -k2,2 | uniq -c | tail -n 50 | tr 0-9 a-j'

cat >"$work/t.py" <<'PY'
import ctypes, hashlib, sys
h = hashlib.sha256()
sizes = (0, 1, 7, 64, 255, 256, 257, 4096, 16385, 100000, 1 << 20, 24 << 20, 48 << 20)
for i, n in enumerate(sizes):
    for c in (0, 0xAB):
        buf = ctypes.create_string_buffer(b"\x11" * 16, n + 16)
        ctypes.memset(ctypes.addressof(buf) + 8, c, n)
        h.update(buf.raw)
h.update(bytes(bytearray(3 << 20)))
h.update(b"".join(str(i).encode() for i in range(100000)))
print(h.hexdigest())
# With the library loaded: the large zero and non-zero kernels served calls.
lib = ctypes.CDLL(None)
if sys.argv[1:] == ["report"] and hasattr(lib, "hz_stat"):
    lib.hz_kernel_for.restype = ctypes.c_char_p
    for c in (0, 0xAB):
        name = lib.hz_kernel_for(c, ctypes.c_size_t(48 << 20)).decode()
        v = ctypes.c_uint64()
        lib.hz_stat(("kernel.%s.bytes" % name).encode(), ctypes.byref(v))
        print("kernel %s for fill %#x wrote %d bytes" % (name, c, v.value), file=sys.stderr)
PY
same "python3 ctypes.memset and buffers" python3 "$work/t.py"
same "python3 on the SSE2 front end, neighbourhood by the C kernel" \
	env HUGEZERO_FRONT=front_sse2 HUGEZERO_KERNEL_NEAR=c python3 "$work/t.py"
v=$(HUGEZERO_VERBOSE=1 HUGEZERO_FRONT=front_sse2 HUGEZERO_KERNEL_NEAR=c LD_PRELOAD=$lib /bin/true 2>&1)
if echo "$v" | grep -q "memset front end front_sse2" && echo "$v" | grep -q "neighbourhood by c$"; then
	ok "HUGEZERO_FRONT and HUGEZERO_KERNEL_NEAR take effect"
else
	bad "HUGEZERO_FRONT / HUGEZERO_KERNEL_NEAR: $v"
fi
# Each of the two large kernels wrote at least the 48 MiB fill. The
# threshold set: unset, each size class times both ways and keeps the
# faster, and on a machine where string stores win at 48 MiB (an AMD EPYC
# with a 32 MiB L3) no large kernel serves the call.
HUGEZERO_NT_THRESHOLD=32M LD_PRELOAD=$lib python3 "$work/t.py" report >/dev/null 2>"$work/hz.err"
if [ "$(grep -cE '^kernel [a-z0-9_]+ for fill 0x?[0-9a-f]* wrote ([5-9][0-9]{7}|[0-9]{9,}) bytes$' "$work/hz.err")" = 2 ]; then
	ok "python3: $(tr '\n' ';' <"$work/hz.err")"
else
	bad "python3: large kernels not used: $(cat "$work/hz.err")"
fi

python3 -c '
import random
r = random.Random(7)
with open("'"$work"'/big.txt", "w") as f:
    for i in range(1500000):
        f.write("%08x %d %s\n" % (r.getrandbits(32), r.randint(0, 10**9), "x" * r.randint(0, 40)))
'
same "sort of a 60 MB file" sort -S 16M -T "$work" "$work/big.txt"

# SQLite with zeroblobs and large blobs (calloc, memset, realloc), and
# numpy creating and filling large zero arrays (calloc of many MiB).
cat >"$work/t.sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, z BLOB, r BLOB, s TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO t SELECT i, zeroblob(i % 5000), randomblob(16), printf('%08d', i * 7919 % 100000) FROM n;
SELECT count(*), sum(length(z)), sum(hex(z) GLOB '*[1-9A-F]*') FROM t;
SELECT length(zeroblob(50000000)), hex(substr(zeroblob(50000000), 49999990, 10));
SELECT s FROM t ORDER BY s DESC LIMIT 3;
SQL
same "sqlite3 with zero blobs up to 50 MB" sqlite3 :memory: ".read $work/t.sql"
same "numpy: large zero arrays" /usr/bin/python3 -c '
import numpy as np
for n in (1 << 16, 1 << 22, 48 << 20, 200 << 20):
    a = np.zeros(n // 8)
    assert not a.any()
    a[::4096] = 1.5
    b = np.zeros_like(a); b += a
    print(n, a.sum(), b.sum(), np.count_nonzero(np.zeros((n // 64, 8))))
m = np.ones((1500, 1500)); print((m @ m).sum())
'

# Fortified program: __memset_chk reaches the library; overflow aborts
# exactly as glibc's own does (message and SIGABRT).
out=$(LD_PRELOAD=$lib "$fortify" ok)
if [ "$out" = "memset_chk reached the library: yes" ]; then ok "fortified memset -> library __memset_chk"
else bad "fortified memset: '$out'"; fi
out=$("$fortify" ok)
if [ "$out" = "memset_chk reached the library: no (not loaded)" ]; then ok "fortified memset without the library"
else bad "fortified program without the library: '$out'"; fi

# overflow: through __memset_chk; xoverflow: through __explicit_bzero_chk.
for mode in overflow xoverflow; do
	# (the braces keep bash's own "Aborted" notice out of the log)
	{ ("$fortify" $mode >/dev/null 2>"$work/glibc.err"); } 2>/dev/null; rc_glibc=$?
	{ (LD_PRELOAD=$lib LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/bind" "$fortify" $mode \
		>/dev/null 2>"$work/hz.err"); } 2>/dev/null; rc_hz=$?
	sym=$([ $mode = overflow ] && echo __memset_chk || echo __explicit_bzero_chk)
	if ! cat "$work"/bind.* | grep -q "to $lib .*symbol \`$sym'"; then
		bad "fortified $mode: $sym not bound to the library"
	fi
	rm -f "$work"/bind.*
	if [ $rc_glibc -eq 134 ] && [ $rc_hz -eq 134 ] && cmp -s "$work/glibc.err" "$work/hz.err" &&
		grep -q '^\*\*\* buffer overflow detected \*\*\*: terminated$' "$work/hz.err"; then
		ok "fortified $mode aborts as glibc does: $(cat "$work/hz.err")"
	else
		bad "fortified $mode: exit $rc_hz (glibc $rc_glibc), stderr '$(cat "$work/hz.err")' vs '$(cat "$work/glibc.err")'"
	fi
done

# memset from a constructor that runs before the library's (the
# pre-initialisation policy: the portable kernel), and from signal handlers
# interrupting memset.
if out=$(LD_PRELOAD=$lib "$early") && echo "$out" | grep -q "memset correct, kernel then c, now "; then
	ok "early constructor and signal handlers: $(echo "$out" | head -2 | tr '\n' ';')"
else
	bad "early constructor and signal handlers: $out"
fi

# The malloc family at its edges, across threads, calloc's zeros: the
# same checks pass on glibc and on the library.
for how in glibc hugezero; do
	pre=$([ $how = hugezero ] && echo "$lib")
	for mode in "" nothp rlimit; do
		if out=$(LD_PRELOAD=$pre "$abi" $mode 2>&1); then
			ok "malloc family on $how${mode:+ ($mode)}: $(echo "$out" | tail -1)"
		else
			bad "malloc family on $how${mode:+ ($mode)}: $(echo "$out" | tail -5)"
		fi
	done
done
{ (LD_PRELOAD=$lib "$abi" doublefree >/dev/null 2>"$work/df.err"); } 2>/dev/null; rc=$?
if [ $rc -eq 134 ] && grep -q "free(): invalid pointer" "$work/df.err"; then
	ok "double free of a large block aborts: $(cat "$work/df.err")"
else
	bad "double free: exit $rc, stderr '$(cat "$work/df.err")'"
fi

# calloc releasing dirty pages instead of clearing them, and the arenas
# without transparent huge pages: the same results.
for opt in HUGEZERO_CALLOC_DIRTY=release HUGEZERO_THP=0; do
	if out=$(env "$opt" LD_PRELOAD="$lib" "$abi" 2>&1); then
		ok "malloc family with $opt: $(echo "$out" | tail -1)"
	else
		bad "malloc family with $opt: $(echo "$out" | tail -5)"
	fi
done

# The report at exit: one file per process, mode 0600, "%p" replaced by
# the pid, a relative path taken from where the program started; a
# symlink planted at the path replaced by the report, not followed; one
# planted at its temporary file refused (exec keeps the shell's pid).
mkdir -p "$work/rep"
(cd "$work/rep" && HUGEZERO_STATS=rel LD_PRELOAD=$lib /usr/bin/python3 -c 'import os; os.chdir("/")')
sh -c 'exec env LD_PRELOAD="$1" HUGEZERO_STATS="$2/rep/r-%p.txt" /bin/true; ' sh "$lib" "$work"
sh -c 'ln -s "$2/victim" "$2/rep/s.$$"; exec env LD_PRELOAD="$1" HUGEZERO_STATS="$2/rep/s" /bin/true' \
	sh "$lib" "$work"
sh -c 'ln -s "$2/victim" "$2/rep/t.$$.tmp"; exec env LD_PRELOAD="$1" HUGEZERO_STATS="$2/rep/t" /bin/true' \
	sh "$lib" "$work" 2>"$work/sym.err"
rel=$(ls "$work"/rep/rel.* 2>/dev/null | head -1) pidf=$(ls "$work"/rep/r-*.txt 2>/dev/null | head -1)
sym=$(ls "$work"/rep/s.* 2>/dev/null | head -1)
if [ -n "$rel" ] && [ "$(stat -c %a "$rel")" = 600 ] && grep -q '^malloc.small.calls [1-9]' "$rel" &&
	[[ $pidf =~ /r-[0-9]+\.txt$ ]] && [ -f "$sym" ] && [ ! -L "$sym" ] && [ ! -e "$work/victim" ] &&
	grep -q "cannot write the report" "$work/sym.err" && ! ls "$work"/rep/t.[0-9]* 2>/dev/null | grep -qv tmp; then
	ok "report: $(basename "$rel") mode 600 after chdir, $(basename "$pidf"), symlinks replaced or refused, never followed"
else
	bad "report: rel '$rel' pid file '$pidf' symlink path '$sym' victim $([ -e "$work/victim" ] && echo written) err '$(cat "$work/sym.err")'"
fi

# Bootstrap without dlsym: a library ahead of it that exits on any dlsym
# call, under the threaded malloc-family run.
if out=$(LD_PRELOAD="$trap:$lib" "$abi" 2>&1); then
	ok "no dlsym call in a whole run: $(echo "$out" | tail -1)"
else
	bad "dlsym trap: $(echo "$out" | tail -3)"
fi
# ... and the trap works: a dlsym call is caught.
if ! LD_PRELOAD="$trap" python3 -c 'import ctypes; ctypes.CDLL(None).getpid' >/dev/null 2>&1; then
	ok "the dlsym trap catches a call"
else
	bad "the dlsym trap caught nothing"
fi

# hugetlb chunks (HUGEZERO_HUGETLB=1): with the pool short, every chunk
# falls back to THP and is counted; with pages reserved, chunks come from
# the pool. The malloc-family checks pass either way. As root both cases
# run (the pool emptied, then 256 pages reserved, then put back), and a
# pool that cannot be set fails; without root only the case the machine
# is in runs, and the other is named as skipped.
count() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$work"/hs.*; }
hugetlb_run() {
	rm -f "$work"/hs.*
	HUGEZERO_HUGETLB=1 HUGEZERO_STATS="$work/hs" LD_PRELOAD=$lib "$abi" >"$work/h.out" 2>&1
}
hugetlb_free() { awk '/HugePages_Free/ { f = $2 } /HugePages_Rsvd/ { r = $2 } END { print f - r }' /proc/meminfo; }
hugetlb_short() {
	if hugetlb_run && [ "$(count hugetlb.fallbacks)" -ge 1 ] && [ "$(count hugetlb.chunks)" -eq 0 ]; then
		ok "hugetlb pool short: $(count hugetlb.fallbacks) counted fallbacks; $(tail -1 "$work/h.out")"
	else
		bad "hugetlb fallback: $(tail -3 "$work/h.out"), chunks $(count hugetlb.chunks), fallbacks $(count hugetlb.fallbacks)"
	fi
}
hugetlb_pool() {
	if hugetlb_run && [ "$(count hugetlb.chunks)" -ge 1 ]; then
		ok "hugetlb pool of $(hugetlb_free) free pages: $(count hugetlb.chunks) chunks from it; $(tail -1 "$work/h.out")"
	else
		bad "hugetlb chunks: $(tail -3 "$work/h.out"), chunks $(count hugetlb.chunks), fallbacks $(count hugetlb.fallbacks)"
	fi
}
nr=/proc/sys/vm/nr_hugepages
pool=$(cat $nr)
# The machine's pool is put back however this script ends.
trap 'echo "$pool" >"$nr" 2>/dev/null; rm -rf "$work"' EXIT
if [ "$(id -u)" -eq 0 ]; then
	if echo 0 2>/dev/null >$nr && [ "$(hugetlb_free)" -lt 32 ]; then
		hugetlb_short
	else
		bad "hugetlb pool: as root, cannot empty it ($(hugetlb_free) pages free)"
	fi
	# Compaction first: 256 free 2 MiB pages need unfragmented memory.
	echo 1 2>/dev/null >/proc/sys/vm/compact_memory
	if echo 256 2>/dev/null >$nr && [ "$(hugetlb_free)" -ge 64 ]; then
		hugetlb_pool
	else
		bad "hugetlb pool: as root, could reserve only $(cat $nr) of 256 pages"
	fi
	echo "$pool" >$nr
elif [ "$(hugetlb_free)" -lt 32 ]; then
	hugetlb_short
	echo "skip - hugetlb pool with pages: reserving them needs root"
else
	hugetlb_pool
	echo "skip - hugetlb pool short: emptying it needs root"
fi

# A program linked with libjemalloc calls jemalloc's extended API on
# pointers from malloc: the checks hold on jemalloc alone, and preloaded,
# every call binds to the library (which routes it by owner).
if out=$("$jeapi" 2>&1); then ok "jemalloc's API on jemalloc: $(echo "$out" | tail -1)"
else bad "jemalloc's API on jemalloc: $(echo "$out" | tail -5)"; fi
if out=$(LD_PRELOAD=$lib LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/jbind" "$jeapi" 2>&1); then
	unbound=""
	for sym in malloc free mallocx rallocx xallocx sallocx dallocx sdallocx nallocx \
		malloc_usable_size mallctl; do
		grep -hq "binding file $jeapi .* to $lib .*symbol \`$sym'" "$work"/jbind.* || unbound+=" $sym"
	done
	if [ -z "$unbound" ]; then ok "jemalloc's API preloaded, bound to the library: $(echo "$out" | tail -1)"
	else bad "jemalloc's API preloaded: not bound to the library:$unbound"; fi
else
	bad "jemalloc's API preloaded: $(echo "$out" | tail -5)"
fi

# Only the interposed ABI and the hz_ API are exported, and C++'s
# operators: exactly those Debian's libjemalloc.so.2 exports.
exports=$(nm -D --defined-only "$lib" | awk '$3 !~ /^_Z/ {print $3}' | sort | tr '\n' ' ')
want="__bzero __explicit_bzero_chk __longjmp_chk __memset_chk __register_atfork _longjmp aligned_alloc bzero calloc dallocx explicit_bzero free free_aligned_sized free_sized hz_clear hz_clear_hinted hz_clear_pages hz_kernel_for hz_stat hz_stats_dump longjmp madvise mallctl mallctlbymib mallctlnametomib mallinfo mallinfo2 malloc malloc_stats malloc_stats_print malloc_trim malloc_usable_size mallocx mallopt memalign memset mprotect nallocx pkey_mprotect posix_memalign prctl pvalloc rallocx realloc reallocarray sallocx sdallocx setns siglongjmp unshare valloc xallocx "
if [ "$exports" = "$want" ]; then ok "exports: $exports"; else bad "exports: '$exports', want '$want'"; fi
# C++'s operators in a C++ program: bound to the library (on and off),
# every check holding, and on libstdc++'s own as well.
for mode in on off; do
	if out=$(HUGEZERO_MODE=$mode LD_PRELOAD=$lib "$cxx" 2>&1) && grep -qx "operator new from $lib" <<<"$out"; then
		ok "C++ operators, HUGEZERO_MODE=$mode: $(tail -1 <<<"$out")"
	else
		bad "C++ operators, HUGEZERO_MODE=$mode: $(head -c 600 <<<"$out")"
	fi
done
if out=$("$cxx" 2>&1) && grep -q '^operator new from .*libstdc++' <<<"$out"; then
	ok "C++ operators on libstdc++'s: $(tail -1 <<<"$out")"
else
	bad "C++ operators on libstdc++'s: $(head -c 600 <<<"$out")"
fi
# The embedded jemalloc's defaults (allocator/small.c), read back through
# mallctl; MALLOC_CONF wins where it sets a key.
# (tcache_nslots_large is an unsigned, the others 8 bytes).
opt='import ctypes, sys
lib = ctypes.CDLL(None)
for name in sys.argv[1:]:
    v = ctypes.c_uint() if name == "tcache_nslots_large" else ctypes.c_ssize_t()
    n = ctypes.c_size_t(ctypes.sizeof(v))
    if lib.mallctl(b"opt." + name.encode(), ctypes.byref(v), ctypes.byref(n), None, ctypes.c_size_t(0)):
        sys.exit("mallctl opt." + name + " failed")
    print(v.value, end=" ")'
keys="tcache_max tcache_gc_incr_bytes lg_extent_max_active_fit dirty_decay_ms muzzy_decay_ms tcache_nslots_large"
ours=$(LD_PRELOAD=$lib /usr/bin/python3 -c "$opt" $keys 2>&1)
theirs=$(MALLOC_CONF=tcache_max:65536,muzzy_decay_ms:0 LD_PRELOAD=$lib /usr/bin/python3 -c "$opt" $keys 2>&1)
if [ "$ours" = "1048576 4194304 16 10000 -1 4 " ] && [ "$theirs" = "65536 4194304 16 10000 0 4 " ]; then
	ok "jemalloc's configuration: $keys ($ours), MALLOC_CONF wins ($theirs)"
else
	bad "jemalloc's configuration: '$ours', with MALLOC_CONF=tcache_max:65536 '$theirs'"
fi
operators() { nm -D --defined-only "$1" | awk '$3 ~ /^_Z/ {print $3}' | sort | tr '\n' ' '; }
ours=$(operators "$lib") theirs=$(operators "$(ldd "$jeapi" | awk '/libjemalloc/ {print $3}')")
if [ -n "$theirs" ] && [ "$ours" = "$theirs" ]; then
	ok "C++ operators: the $(wc -w <<<"$ours") that jemalloc exports"
else
	bad "C++ operators: '$ours', jemalloc's '$theirs'"
fi

finish
