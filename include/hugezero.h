/* hugezero: fast memory clearing for Linux. Public API.
 *
 * Loaded with LD_PRELOAD=libhugezero.so, the library replaces memset,
 * __memset_chk, bzero and explicit_bzero; this header adds the clears that
 * know more than memset can: whole pages, and the page touched first. */
#ifndef HUGEZERO_H
#define HUGEZERO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Zeroes [p, p+n) with one kernel call over the whole extent, chosen for
 * its size. Returns p. */
void *hz_clear(void *p, size_t n);

/* Zeroes npages pages at p (the system page size). Returns 0, or -1 with
 * errno EINVAL if p is not page-aligned or the extent overflows. */
int hz_clear_pages(void *p, size_t npages);

/* Zeroes [p, p+n) so that the page holding hint is cleared last, with
 * cache-allocating stores, together with 2 pages on each side: the rest is
 * cleared first (right of that neighbourhood, then left of it), streaming
 * when the extent does not fit in cache. A hint outside [p, p+n) means no
 * hint. Returns p. */
void *hz_clear_hinted(void *p, size_t n, const void *hint);

/* Reads one counter into *value: returns 0, or ENOENT for an unknown name.
 * Counters are process-wide; the names are those HUGEZERO_STATS writes,
 * among them:
 *   "memset.large.calls"      memset calls above 16 KiB (and .bytes)
 *   "memset_chk.calls"        __memset_chk calls of at least 64 KiB
 *   "hinted.calls"            hz_clear_hinted calls that had a hint
 *   "kernel.<name>.calls"     calls of at least 64 KiB served by kernel
 *                             <name> (and .bytes: bytes it wrote)
 *   "malloc.large.calls"      blocks the hugepage arenas handed out
 *   "calloc.large.known_zero_bytes"  calloc bytes not cleared: known zero
 *   "purge.syscalls"          system calls that released memory
 *   "malloc.small.calls"      blocks the embedded jemalloc handed out */
int hz_stat(const char *name, uint64_t *value);

/* Writes the report now: to path ("stderr", or a file: "%p" becomes the
 * pid, otherwise ".PID" is appended; mode 0600, a symlink is not
 * followed), NULL for HUGEZERO_STATS's (or stderr); in format "text",
 * "json" or "prometheus", NULL for HUGEZERO_STATS_FORMAT's. Returns 0, or
 * -1 with errno (EINVAL for an unknown format). */
int hz_stats_dump(const char *path, const char *format);

/* The name of the kernel that would serve a fill of n bytes with byte c
 * on the calling thread alone, under the current policy and what it has
 * learnt so far (for diagnostics). */
const char *hz_kernel_for(int c, size_t n);

#ifdef __cplusplus
}
#endif
#endif
