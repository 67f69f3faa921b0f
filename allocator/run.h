/* allocator/run.h: blocks up to HZ_RUN_MAX, page runs in the arenas'
 * chunks. calloc clears only a block's dirty runs, outside the lock. */
#ifndef HZ_RUN_H
#define HZ_RUN_H

#include <stddef.h>

#include "chunk.h"

#pragma GCC visibility push(hidden)

/* A run of npages pages, its first page's index in its chunk a multiple
 * of align (a power of two up to HZ_HUGE_PAGES), in the calling thread's arena, a new chunk mapped
 * when none has room; where no chunk can be mapped (an address-space
 * limit), a run in another arena's chunks. With zero set its bytes read
 * as zero. *refill is set when the block took pages of the reserve or
 * pages not in memory (the zeroer has a reserve to refill), else left.
 * NULL when no arena has room and no chunk can be mapped. */
void *hz_run_alloc(size_t npages, size_t align, int zero, int *refill);
/* The length in bytes of the live block at p in chunk c, or 0. */
size_t hz_run_usable(struct hz_chunk *c, const void *p);
/* Frees the live block at p in chunk c: 0, or -1 when p is not one. */
int hz_run_free(struct hz_chunk *c, void *p);
/* Resizes the live block at p in chunk c (old bytes) to size bytes in
 * place: 0, or -1 when the pages after it are not free. */
int hz_run_resize(struct hz_chunk *c, void *p, size_t old, size_t size);

#pragma GCC visibility pop

#endif
