/* preload/alloc.h: the allocator's paths, fast and slow side by side.
 * The fast paths of malloc and free, shared by glibc's names (malloc.c),
 * C++'s (cxx.c) and jemalloc's (jemalloc_api.c): one compare each, then
 * jemalloc's own fast path. Everything else (large blocks, the
 * allocator's start, HUGEZERO_MODE=off, counting) is behind the compare,
 * in alloc.c's noinline slow paths. Calls start.h, glibc.h and the rooms
 * below preload/. */
#ifndef HZ_ALLOC_H
#define HZ_ALLOC_H

#include <stddef.h>

#include "../allocator/registry.h"
#include "../allocator/small.h"

#pragma GCC visibility push(hidden)

/* malloc's and calloc's way past the fast paths: a block of size bytes,
 * cleared when zero is 1. */
HZ_NOINLINE void *hz_alloc_slow(size_t size, int zero);
/* free's way for a pointer that may be the arenas' (or glibc's). */
HZ_NOINLINE void hz_free_slow(void *p);
/* realloc's way for all but a jemalloc block resized within jemalloc. */
HZ_NOINLINE void *hz_realloc_slow(void *p, size_t size);
/* A block aligned to align (a power of two); NULL and errno ENOMEM. */
void *hz_alloc_aligned(size_t align, size_t size);

/* glibc's message for a pointer free cannot take, and abort. */
__attribute__((noreturn)) void hz_bad_pointer(const char *what);
/* A block moved between owners: min(have, size) bytes of p copied into
 * q, p freed (by owner). Returns q; NULL (p untouched) when q is. */
void *hz_realloc_copy(void *q, void *p, size_t have, size_t size);

static inline void *hz_fast_malloc(size_t size)
{
	if (hz_likely(size < hz_large_min))
		return hz_je_malloc(size);
	return hz_alloc_slow(size, 0);
}

/* No load of the arenas' table for a pointer outside their window, as
 * every one of jemalloc's is (registry.h). */
static inline void hz_fast_free(void *p)
{
	if (hz_unlikely(hz_reg_in_window(p)))
		hz_free_slow(p);
	else
		hz_je_free(p);
}

#pragma GCC visibility pop

#endif
