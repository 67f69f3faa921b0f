/* preload/alloc.h: the allocator's paths, fast and slow side by side.
 * The fast paths of malloc and free, shared by glibc's names (malloc.c),
 * C++'s (cxx.c) and jemalloc's (jemalloc_api.c): one compare each, then
 * jemalloc's own fast path. Everything else (large blocks, the
 * allocator's start, HUGEZERO_MODE=off, counting, the arms) is behind the
 * compare, in alloc.c's noinline slow paths, which every exported form
 * shares. */
#ifndef HZ_ALLOC_H
#define HZ_ALLOC_H

#include <stddef.h>

#include "../allocator/registry.h"
#include "../allocator/small.h"

#pragma GCC visibility push(hidden)

/* The way past the fast paths for every allocating form (malloc, calloc,
 * the memalign family, mallocx, C++'s new): a block of size bytes as
 * jemalloc's mallocx flags say (HZ_JE_ZERO, an alignment, an arena; 0 for
 * malloc's). The one place that starts the allocator, tests the mode,
 * counts, samples the call site, runs the arms and falls back. NULL and
 * errno ENOMEM when no one can serve it. */
HZ_NOINLINE void *hz_alloc_slow(size_t size, int flags);
/* The way for a pointer that may be the arenas' (or glibc's), for every
 * freeing form. */
HZ_NOINLINE void hz_free_slow(void *p);
/* realloc's and rallocx's way for all but a jemalloc block resized within
 * jemalloc: flags as hz_alloc_slow's; with HZ_JE_ZERO the bytes past the
 * old size read as zero. NULL (p untouched) when memory is out. */
HZ_NOINLINE void *hz_realloc_slow(void *p, size_t size, int flags);
/* malloc_usable_size's way for a pointer in the arenas' window. */
HZ_NOINLINE size_t hz_usable_slow(void *p);

/* Whether a block of size bytes with these flags is the arenas': from
 * hz_large_threshold, aligned to at most a huge page, no jemalloc arena named. */
static inline int hz_alloc_large(size_t size, int flags)
{
	return hz_route_large(size) && HZ_JE_ALIGN_OF(flags) <= HZ_HUGE_SIZE &&
	       !(flags & HZ_JE_ARENA_MASK);
}

/* A block aligned to align (a power of two): the memalign family's and
 * aligned new's way. */
static inline void *hz_alloc_aligned(size_t align, size_t size)
{
	return hz_alloc_slow(size, HZ_JE_LG_ALIGN(__builtin_ctzl(align)));
}

/* glibc's message for a pointer free cannot take, and abort. */
__attribute__((noreturn)) void hz_bad_pointer(const char *what);

/* glibc's memset (arm A of the A/B arms, the baseline), set with them. */
extern void *(*hz_ab_baseline)(void *p, int c, size_t n);

static inline void *hz_fast_malloc(size_t size)
{
	if (hz_likely(size < hz_large_threshold))
		return hz_small.malloc(size);
	return hz_alloc_slow(size, 0);
}

/* No load of the arenas' table for a pointer outside their window, as
 * every one of jemalloc's is (registry.h). */
static inline void hz_fast_free(void *p)
{
	if (hz_unlikely(hz_reg_in_window(p)))
		hz_free_slow(p);
	else
		hz_small.free(p);
}

#pragma GCC visibility pop

#endif
