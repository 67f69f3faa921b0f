/* allocator/arena.h: arenas, each a lock, the chunks it owns, its cache
 * of free huge blocks and its counters. A thread keeps to one arena, so
 * threads allocating at once are not serialised on one lock. The blocks
 * in chunks are run.h's, the huge blocks huge_cache.h's, what is released
 * budget.h's. The lock
 * order, for every lock of the allocator: fork_locks.h. */
#ifndef HZ_ARENA_H
#define HZ_ARENA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "chunk.h"
#include "claim.h"
#include "layout.h"
#include "purge.h"

#pragma GCC visibility push(hidden)

/* An arena's counters, for reports; a forked child's start from zero. */
struct hz_arena_counters {
	size_t known_zero, purged;
	uint64_t purges, purge_ranges, purge_syscalls, purge_fallbacks;
	uint64_t nalloc, ncalloc, calloc_bytes, nfree;
	uint64_t hugetlb_chunks, hugetlb_fallbacks;
	uint64_t cleared_caller;               /* bytes calloc cleared on the caller's thread */
	uint64_t reserve_hits, reserve_misses; /* blocks handed out all in memory, or not */
	uint64_t unused;                       /* bytes the zeroer cleared or populated, released before a block took them */
	uint64_t refaulted, refaults;          /* bytes handed out again after a release, and the faults they cost (estimated) */
};

/* The zeroer's recent record in an arena for one kind of its work
 * (populating, clearing): bytes it made clean that a block took, and that
 * were released before one did; work.h stops that kind of work there
 * while the second outweighs the first. */
struct hz_record {
	size_t paid, wasted;
};

struct hz_arena {
	pthread_mutex_t lock;
	pthread_cond_t claim_done; /* a claim in this arena ended (claim.h) */
	unsigned nchunks, cap;     /* no fixed cap: the array grows while the kernel maps chunks */
	struct hz_chunk **chunks;  /* mapped, doubled when full */
	size_t allocated;          /* bytes of live blocks */
	struct hz_huge *cache;     /* free huge blocks, most recently freed first */
	size_t cached;             /* their mapped bytes */
	uint64_t window_at;        /* when the decay's window began; 0: none (no free memory) */
	size_t low;                /* the least free memory in memory it held in the window (budget.h) */
	size_t evicted;            /* huge blocks' bytes unmapped lately: a new one of that much counts as refaulted */
	uint64_t frees;            /* a clock: blocks and chunks remember it when freed */
	size_t missed;             /* bytes handed out that were not in memory, since the last decay:
				    * the reserve refills up to this much (budget.h) */
	struct hz_record populated, cleared; /* the zeroer's recent record here */
	struct hz_arena_counters n;
};

extern struct hz_arena hz_arenas[HZ_ARENAS];
/* Whether chunks come from the hugetlb pool (MAP_HUGETLB) when it can give
 * them; otherwise transparent huge pages. Set once at setup. */
extern int hz_hugetlb;

/* The calling thread's arena. */
struct hz_arena *hz_arena_of_thread(void);
static inline struct hz_arena *hz_arena_of(unsigned owner)
{
	return &hz_arenas[owner];
}

/* A new chunk for a, mapped and registered without the lock (mapping it,
 * and timing its first huge page, may take milliseconds); then added
 * under it. 0, or -1 when memory or address space is out. */
int hz_arena_grow(struct hz_arena *a);

/* The arena's free bytes in memory (lock held): dirty chunk pages, clean
 * ones (the reserve) and cached huge blocks. */
size_t hz_arena_free_bytes(const struct hz_arena *a);
/* Its free clean chunk pages, in bytes (lock held): its share of the
 * reserve. */
size_t hz_arena_clean_bytes(const struct hz_arena *a);

/* The same over every arena, each under its lock (no lock held). */
size_t hz_arenas_free_bytes(void);
size_t hz_arenas_clean_bytes(void);

/* A block handed out (lock held): counted, with zero set as calloc's;
 * fresh of its bytes were not in memory. The free memory left lowers the
 * window's low-water mark (a->low). */
void hz_arena_count_alloc(struct hz_arena *a, size_t bytes, size_t fresh, int zero);
/* The arena's free memory just shrank (lock held): the low-water mark. */
void hz_arena_note_low(struct hz_arena *a);
/* One purge of bytes, counted (lock held); returns bytes. */
size_t hz_arena_count_purge(struct hz_arena *a, const struct hz_purge_result *r, size_t bytes);

/* Before memory of a (lock held) is handed out or unmapped: chunk c's
 * pages [lo, hi), or with c NULL the cached block h. An overlapping claim
 * is marked taken and, for a clear, waited for (claim.h). */
void hz_arena_collide(struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		      const struct hz_huge *h);
/* Waits until no piece of a is claimed (lock held; trim). */
void hz_arena_quiesce(struct hz_arena *a);

#pragma GCC visibility pop

#endif
