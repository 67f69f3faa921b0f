#!/usr/bin/env bash
# Near a memory cgroup's limit the library gives back what it holds free,
# the embedded jemalloc's pages too (root, cgroup v1's memory controller;
# skipped elsewhere). A program writes and frees 96 MiB of 64 KiB blocks
# (jemalloc's, kept for the program to take again), then asks for 4
# blocks of 32 MiB in a cgroup of 224 MiB, which do not fit beside them:
# the library must purge jemalloc's 96 MiB first (a purge counted, the
# report's malloc.small.purged_bytes); without it the kernel, which cannot
# take those pages (no swap), ends the program. glibc, which gives large
# blocks their own mappings and trims its heap at free, runs it too.
# Then the group filled by a file's page cache: no release.
# Usage: pressure.sh LIBHUGEZERO
set -u
lib=$(realpath "$1")
. "$(dirname "$0")/../util/common.sh"
[ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/memory ] || { echo "skip: needs root and cgroup v1 memory"; exit 77; }
cur=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
cg=/sys/fs/cgroup/memory${cur%/}/hz_pressure_$$
mkdir "$cg" || { echo "skip: cannot make $cg"; exit 77; }
trap 'rmdir "$cg" 2>/dev/null; rm -rf "$work"' EXIT
echo $((224 << 20)) >"$cg/memory.limit_in_bytes"
[ -e "$cg/memory.memsw.limit_in_bytes" ] && echo $((224 << 20)) >"$cg/memory.memsw.limit_in_bytes"
prog='
small = [bytearray(65536) for _ in range(1536)]
for b in small:
    b[0] = b[-1] = 1
del small
large = [bytearray(32 << 20) for _ in range(4)]
for b in large:
    b[::4096] = b"\1" * len(b[::4096])
print(sum(len(b) for b in large))
'
both() { # WHAT PROGRAM [ARG]: under glibc and hugezero in the group, 128 MiB printed
	local a pre out rc what=$1
	shift
	for a in glibc hugezero; do
		pre=$([ $a = hugezero ] && echo "$lib")
		out=$(sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
			env LD_PRELOAD="$pre" HUGEZERO_STATS="$work/r" HUGEZERO_STATS_FORMAT=text \
			/usr/bin/python3 -c "$@" 2>&1)
		rc=$?
		if [ $rc = 0 ] && [ "$out" = $((128 << 20)) ]; then ok "$a: $what"
		else bad "$a: exit $rc: $(tail -c 300 <<<"$out")"; fi
	done
}
both "4 x 32 MiB after 96 MiB of small blocks freed, in 224 MiB" "$prog"
purged=$(awk '$1 == "malloc.small.purged_bytes" {print $2}' "$work"/r.* 2>/dev/null)
releases=$(awk '$1 == "limits.pressure_releases" {print $2}' "$work"/r.* 2>/dev/null)
if [ "${releases:-0}" -ge 1 ] && [ "${purged:-0}" -ge $((64 << 20)) ]; then
	ok "hugezero: jemalloc's free pages purged under the cgroup's pressure ($((purged >> 20)) MiB, $releases releases)"
else
	bad "hugezero: purged ${purged:-none} bytes, ${releases:-no} pressure releases"
fi

# A group full of page cache is not under pressure: the kernel drops its
# inactive file pages first. A file read in the group fills it to its
# limit; then 4 blocks of 32 MiB: no release (glibc runs it too).
head -c $((256 << 20)) /dev/zero >"$work/file"
# Its pages out of the cache, so that the read charges them to the group.
/usr/bin/python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$work/file"
prog2='
import sys
with open(sys.argv[1], "rb") as f:
    while f.read(1 << 20):
        pass
large = [bytearray(32 << 20) for _ in range(4)]
for b in large:
    b[::4096] = b"\1" * len(b[::4096])
print(sum(len(b) for b in large))
'
rm -f "$work"/r.*
both "4 x 32 MiB after a 256 MiB file was read, in 224 MiB" "$prog2" "$work/file"
checks=$(awk '$1 == "limits.pressure_checks" {print $2}' "$work"/r.* 2>/dev/null)
releases=$(awk '$1 == "limits.pressure_releases" {print $2}' "$work"/r.* 2>/dev/null)
if [ "${checks:-0}" -ge 1 ] && [ "${releases:-1}" = 0 ]; then
	ok "hugezero: page cache at the limit is no pressure ($checks checks, no release)"
else
	bad "hugezero: ${checks:-no} checks, ${releases:-no} pressure releases with only page cache near the limit"
fi
finish
