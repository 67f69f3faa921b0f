/* allocator/small.h: small blocks, and where they end. Blocks below
 * hz_large_threshold go to jemalloc; the library carries its own copy, built
 * from Debian's static archive with every symbol renamed hz_je_*
 * (scripts/jemalloc-rename.sh): its malloc symbols never become the
 * program's, and the program's mallocx & co. (which hugezero exports,
 * routed by owner) never reach it by name. small.c (in the library, with
 * jemalloc) is the glue: calloc cleared in place, figures, purges;
 * small_fork.c its fork handlers. */
#ifndef HZ_SMALL_H
#define HZ_SMALL_H

#include <stddef.h>
#include <stdint.h>

#include "../obs/obs.h"

#pragma GCC visibility push(hidden)

/* Blocks from hz_large_threshold bytes up go to the hugepage arenas (large.h),
 * smaller ones to jemalloc: one compare on malloc's path. 0 until the
 * allocator is configured, so that the first call takes the slow path,
 * which configures it (and stays 0 while the library forwards to glibc:
 * every call then takes the slow path); SIZE_MAX where pages are not
 * 4 KiB, which the arenas assume. */
extern size_t hz_large_threshold;
static inline int hz_route_large(size_t size)
{
	return size >= hz_large_threshold;
}

/* The small engine: every small block's call goes through this table
 * (the fast paths' direct call becomes a call through one load: no
 * instruction more). The embedded jemalloc's by default; the next
 * allocator's in the link order with HUGEZERO_SMALL=next
 * (hz_small_use_next), set at the allocator's start, before any block.
 * Flags are jemalloc's mallocx flags. */
struct hz_small_engine {
	void *(*malloc)(size_t size);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t size);
	void (*free)(void *p);
	size_t (*usable)(void *p);
	void *(*mallocx)(size_t size, int flags);
	void *(*rallocx)(void *p, size_t size, int flags);
	size_t (*xallocx)(void *p, size_t size, size_t extra, int flags);
	size_t (*nallocx)(size_t size, int flags);
	void (*dallocx)(void *p, int flags);
	void (*sdallocx)(void *p, size_t size, int flags);
	int jemalloc; /* 1: the embedded jemalloc's (its figures, its calloc cleared in place) */
};
extern struct hz_small_engine hz_small;
/* The next allocator's malloc family (functions of another library):
 * every one but trim required. */
struct hz_small_next {
	void *(*malloc)(size_t size);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t size);
	void (*free)(void *p);
	size_t (*usable)(void *p);
	int (*memalign)(void **out, size_t align, size_t size); /* posix_memalign */
	int (*trim)(size_t pad);                                /* malloc_trim, or NULL */
};
/* Small blocks from now on go to fns: 0, or -1 (nothing
 * changed) when one it requires is missing. At the allocator's start. */
int hz_small_use_next(const struct hz_small_next *fns);

/* The embedded jemalloc's pthread_atfork (scripts/jemalloc-rename.sh
 * renames its call), in small_fork.c: its handlers are kept, and run by
 * the library's one set of fork handlers through these three. */
int hz_je_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
void hz_small_fork_prepare(void);
void hz_small_fork_parent(void);
void hz_small_fork_child(void);
/* Its heap profiling's log, exp and round, libm's functions, and its
 * unwinder's two, libgcc_s's (small_libs.c): so that neither library is
 * loaded for them. */
double hz_je_log(double x);
double hz_je_exp(double x);
double hz_je_round(double x);
struct _Unwind_Context;
int hz_je_unwind_backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg);
uintptr_t hz_je_unwind_getip(struct _Unwind_Context *ctx);

#pragma GCC visibility pop


/* Its configuration (small.c). */
extern const char *hz_je_malloc_conf;
/* jemalloc's standard entry points, which have its fast paths. */
void *hz_je_malloc(size_t size);
void *hz_je_calloc(size_t n, size_t size);
void *hz_je_realloc(void *ptr, size_t size);
void hz_je_free(void *ptr);
size_t hz_je_malloc_usable_size(void *ptr);
/* Its extended API. */
void *hz_je_mallocx(size_t size, int flags);
void *hz_je_rallocx(void *ptr, size_t size, int flags);
size_t hz_je_xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t hz_je_sallocx(const void *ptr, int flags);
void hz_je_dallocx(void *ptr, int flags);
void hz_je_sdallocx(void *ptr, size_t size, int flags);
size_t hz_je_nallocx(size_t size, int flags);
int hz_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int hz_je_mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int hz_je_mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
		       size_t newlen);
void hz_je_malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
			      const char *opts);

/* jemalloc's flags (jemalloc/jemalloc_macros.h). */
#define HZ_JE_ZERO 0x40                        /* MALLOCX_ZERO */
#define HZ_JE_LG_ALIGN(la) ((int)(la))         /* MALLOCX_LG_ALIGN */
#define HZ_JE_LG_ALIGN_MASK 0x3f               /* the alignment's bits */
#define HZ_JE_ALIGN_OF(flags) ((size_t)1 << ((flags) & HZ_JE_LG_ALIGN_MASK) & ~(size_t)1)
#define HZ_JE_TCACHE_MASK 0xfff00              /* MALLOCX_TCACHE(tc) bits */
#define HZ_JE_ARENA_MASK 0xfff00000u           /* MALLOCX_ARENA(a) bits */
#define HZ_JE_ARENAS_ALL "4096"                /* MALLCTL_ARENAS_ALL, in mallctl names */

/* jemalloc's first large size class (16 KiB with 4 KiB pages): from there
 * its calloc zeroes a recycled dirty block with MADV_DONTNEED, and every
 * page faults in again (unless its THP mode is "always"): 128 us for
 * 256 KiB against 2.2 us for glibc (bench/alloc_bench). Such blocks are
 * cleared here instead, below HZ_JE_CLEAR_MAX: above it (reached only
 * with the arenas off or HUGEZERO_LARGE_MIN raised) jemalloc's own calloc
 * knows fresh memory, which a clear would commit. */
#define HZ_JE_LARGE_MIN ((size_t)16 << 10)
#define HZ_JE_CLEAR_MAX ((size_t)1 << 20)
static inline int hz_small_clears(size_t size)
{
	return size >= HZ_JE_LARGE_MIN && size < HZ_JE_CLEAR_MAX;
}

/* jemalloc's block of size bytes (flags as mallocx's, 0 for none),
 * cleared whole, hinted at its first page; NULL when memory is out (errno
 * as jemalloc's malloc or mallocx leaves it). */
#pragma GCC visibility push(hidden)

HZ_NOINLINE void *hz_small_calloc(size_t size, int flags);

/* jemalloc's figures, refreshed. */
struct hz_small_totals {
	size_t in_use, mapped;
};
void hz_small_totals(struct hz_small_totals *t);
/* The same and the calls its arenas served, by name (an obs.h source). */
void hz_small_counters(hz_counter_fn fn, void *arg);
/* Gives jemalloc's free pages (dirty and lazily freed) in every arena
 * back at once, counted (malloc.small.purged_bytes); with
 * HUGEZERO_SMALL=next, the next allocator's malloc_trim. */
void hz_small_trim(void);

#pragma GCC visibility pop

#endif
