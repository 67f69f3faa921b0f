/* Huge blocks: a block too large for a chunk gets a mapping of its own,
 * aligned to the chunk size so that no other block shares its registry
 * slots, asked for transparent huge pages, and kept after free in its
 * arena's cache for reuse by the best-fitting later request, within the
 * dirty budget (purge.c). Their descriptors are never unmapped: free's
 * ownership test reads them without a lock. */
#ifndef HZ_HUGE_H
#define HZ_HUGE_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

#pragma GCC visibility push(hidden)

/* The largest block the arenas serve. */
#define HZ_HUGE_MAX ((size_t)1 << 46)

/* Every huge block mapped to its size in whole pages, and blocks of every
 * size served here, none in chunks: where every mapping is charged in
 * full (large.h). Set once by hz_large_setup. */
extern int hz_huge_fitted;

struct hz_huge {
	unsigned char *base;
	size_t size;   /* usable bytes, whole pages */
	size_t mapped; /* whole huge pages; whole pages where no more could be mapped */
	int live, dirty;
	size_t cleared;       /* while free and dirty: its first bytes the zeroer made zero */
	int shared;           /* while free: shared with a forked process, left to calloc */
	unsigned owner;
	uint64_t freed;       /* its arena's clock when it was freed */
	struct hz_huge *next; /* in its arena's cache while free */
};

/* The huge block whose first byte is p, live or cached; NULL otherwise. */
struct hz_huge *hz_huge_at(const void *p);
/* A huge block of at least size bytes (HZ_LARGE_MAX < size <=
 * HZ_HUGE_MAX; or smaller, where no chunk could be mapped) from the
 * calling thread's arena: a cached one, or a new mapping of whole huge
 * pages (of whole pages where that much cannot be mapped: an
 * address-space limit); with zero set its bytes read as zero. NULL when
 * memory is out. */
void *hz_huge_alloc(size_t size, int zero);
/* Frees h into its arena's cache: 0, or -1 when it is not live. */
int hz_huge_free(struct hz_huge *h);
/* Its usable size, or 0 when it is not live. */
size_t hz_huge_usable(struct hz_huge *h);
/* Resizes it in place to size bytes (> HZ_LARGE_MAX), within its
 * mapping: 0, or -1. */
int hz_huge_resize(struct hz_huge *h, size_t size);
/* Moves it to a mapping of size bytes without copying (mremap): the new
 * place, or NULL (h unchanged) when the kernel cannot. */
void *hz_huge_move(struct hz_huge *h, size_t size);
/* Unregisters and unmaps a free huge block (its arena's lock held, or one
 * no other thread can reach yet). */
void hz_huge_destroy(struct hz_huge *h);

/* fork: the descriptor pool's lock (after the arenas', before the
 * registry's). */
void hz_huge_lock(void);
void hz_huge_unlock(void);

#pragma GCC visibility pop

#endif
