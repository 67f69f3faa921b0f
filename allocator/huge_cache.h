/* allocator/huge_cache.h: huge blocks served from their arenas: a cached
 * free block that fits best (cut to size when much larger), or a new
 * mapping; after free, kept in the arena's cache within the dirty budget
 * (budget.h). Resized in place within their mapping, or moved by the
 * kernel. */
#ifndef HZ_HUGE_CACHE_H
#define HZ_HUGE_CACHE_H

#include <stddef.h>

#include "huge.h"

#pragma GCC visibility push(hidden)

/* A huge block of at least size bytes (HZ_RUN_MAX < size <=
 * HZ_HUGE_MAX; or smaller, where no chunk could be mapped) from the
 * calling thread's arena: a cached one, or a new mapping of whole huge
 * pages (of whole pages where that much cannot be mapped: an
 * address-space limit); with zero set its bytes read as zero. *refill is
 * set when it is a new mapping, else left. NULL when memory is out. */
void *hz_huge_cache_alloc(size_t size, int zero, int *refill);
/* Frees h into its arena's cache: 0, or -1 when it is not live. */
int hz_huge_cache_free(struct hz_huge *h);
/* Its usable size, or 0 when it is not live. */
size_t hz_huge_cache_usable(struct hz_huge *h);
/* Resizes it in place to size bytes (> HZ_RUN_MAX), within its
 * mapping: 0, or -1. */
int hz_huge_cache_resize(struct hz_huge *h, size_t size);
/* Moves it to a mapping of size bytes without copying (mremap): the new
 * place, or NULL (h unchanged) when the kernel cannot. */
void *hz_huge_cache_move(struct hz_huge *h, size_t size);

#pragma GCC visibility pop

#endif
