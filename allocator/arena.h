/* Arenas: each a lock, the chunks it owns, its cache of free huge blocks
 * and its counters. A thread keeps to one arena, so threads allocating at
 * once are not serialised on one lock. Blocks up to HZ_LARGE_MAX are page
 * runs in the arena's chunks (chunk.h); larger ones huge blocks (huge.h).
 * Lock order everywhere: an arena, then the descriptor pool, then the
 * registry. */
#ifndef HZ_ARENA_H
#define HZ_ARENA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"
#include "chunk.h"
#include "prim.h"

#pragma GCC visibility push(hidden)

#define HZ_ARENAS 4
/* The largest block a chunk serves; larger ones are huge blocks. */
#define HZ_LARGE_MAX (HZ_CHUNK_SIZE / 2)

struct hz_huge;

struct hz_arena {
	pthread_mutex_t lock;
	pthread_cond_t zeroer_done; /* a piece of the zeroer's ended (background.h) */
	unsigned nchunks, cap;     /* no fixed cap: the array grows while the kernel maps chunks */
	struct hz_chunk **chunks;  /* mapped, doubled when full */
	size_t allocated, known_zero;
	struct hz_huge *cache; /* free huge blocks, most recently freed first */
	size_t cached;         /* their mapped bytes */
	uint64_t dirty_since;  /* when free dirty memory last appeared; 0: none */
	uint64_t frees;        /* a clock: blocks and chunks remember it when freed */
	size_t missed;         /* bytes handed out that were not in memory, since the last decay:
				* the reserve refills up to this much (and HUGEZERO_RESERVE) */
	/* Counters. */
	size_t purged;
	uint64_t purges, purge_ranges, purge_syscalls, purge_fallbacks;
	uint64_t nalloc, ncalloc, calloc_bytes, nfree;
	uint64_t hugetlb_chunks, hugetlb_fallbacks;
	uint64_t cleared_caller;                 /* bytes calloc cleared on the caller's thread */
	uint64_t reserve_hits, reserve_misses;   /* blocks handed out all in memory, or not */
};

extern struct hz_arena hz_arenas[HZ_ARENAS];
/* Whether chunks come from the hugetlb pool (MAP_HUGETLB) when it can give
 * them; otherwise, and for huge blocks, transparent huge pages. Set once
 * by hz_large_setup. */
extern int hz_hugetlb;

/* The calling thread's arena. */
struct hz_arena *hz_arena_of_thread(void);
static inline struct hz_arena *hz_arena_of_chunk(const struct hz_chunk *c)
{
	return &hz_arenas[c->owner];
}

/* A block handed out (lock held): counted, with zero set as calloc's;
 * fresh of its bytes were not in memory. */
void hz_arena_count_alloc(struct hz_arena *a, size_t bytes, size_t fresh, int zero);
/* A new chunk for a, mapped and registered without the lock (mapping it,
 * and timing its first huge page, may take milliseconds); then added
 * under it. 0, or -1 when memory or address space is out. */
int hz_arena_grow(struct hz_arena *a);
/* One batched release of bytes, counted (lock held); returns bytes. */
size_t hz_arena_count_purge(struct hz_arena *a, const struct hz_release_result *r, size_t bytes);

/* ---- blocks in chunks (arena.c) ---- */

/* A run of npages pages in the calling thread's arena, a new chunk mapped
 * when none has room; where no chunk can be mapped (an address-space
 * limit), a run in another arena's chunks. With zero set its bytes read
 * as zero, cleared only where pages were dirty, outside the lock. NULL
 * when no arena has room and no chunk can be mapped. */
void *hz_arena_alloc(size_t npages, int zero);
/* The length in bytes of the live block at p in chunk c, or 0. */
size_t hz_arena_usable(struct hz_chunk *c, const void *p);
/* Frees the live block at p in chunk c: 0, or -1 when p is not one. */
int hz_arena_free(struct hz_chunk *c, void *p);
/* Resizes the live block at p in chunk c (old bytes) to size bytes in
 * place: 0, or -1 when the pages after it are not free. */
int hz_arena_resize(struct hz_chunk *c, void *p, size_t old, size_t size);

/* ---- the dirty budget (purge.c) ---- */

/* Free dirty memory an arena keeps for reuse (chunk pages and cached huge
 * blocks alike), and how long. Set once by hz_large_setup. */
extern size_t hz_dirty_max;
extern uint64_t hz_dirty_decay_ns;
/* The arena's free bytes in memory (lock held): dirty chunk pages, clean
 * ones (the reserve) and cached huge blocks. */
size_t hz_arena_dirty(const struct hz_arena *a);
/* After a free (lock held): over hz_dirty_max, or kept longer than
 * hz_dirty_decay_ns, free dirty memory goes back to the kernel, least
 * recently freed first. */
void hz_arena_bound(struct hz_arena *a);
/* Releases all the arena's free dirty memory, partial huge pages included,
 * and unmaps every cached huge block (lock held); returns the bytes. */
size_t hz_arena_trim(struct hz_arena *a);

#pragma GCC visibility pop

#endif
