/* The fast paths of malloc and free, shared by glibc's names (malloc.c)
 * and C++'s (cxx.c): one compare each, then jemalloc's own fast path.
 * Everything else (large blocks, the allocator's start, HUGEZERO_MODE=off,
 * counting) is behind the compare, in malloc.c's noinline slow paths. */
#ifndef HZ_FAST_H
#define HZ_FAST_H

#include <stddef.h>

#include "../allocator/registry.h"
#include "../allocator/small.h"
#include "preload.h"

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
	if (hz_unlikely(hz_reg_maybe(p)))
		hz_free_slow(p);
	else
		hz_je_free(p);
}

#endif
