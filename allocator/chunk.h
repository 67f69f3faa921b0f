/* allocator/chunk.h: page runs inside one 64 MiB hugepage chunk, and
 * what each page holds. First-fit runs, coalesced when freed; every free
 * page is dirty (may hold non-zero bytes), clean (in memory and zero: the
 * zeroer cleared or populated it), or neither (fresh, or released: zero,
 * not in memory). A page of a live block is dirty. calloc clears only the
 * dirty runs of a block. Not thread-safe: the caller holds the chunk's arena
 * lock. */
#ifndef HZ_CHUNK_H
#define HZ_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "../os/os.h"
#include "layout.h"
#include "registry.h"

#pragma GCC visibility push(hidden)

struct hz_chunk {
	unsigned char *base;              /* HZ_CHUNK_SIZE bytes, aligned */
	size_t free_pages;
	size_t dirty_free;                /* pages free and dirty */
	size_t clean_free;                /* pages free and clean; with dirty_free, what a purge could release */
	size_t taken_fresh;               /* pages of the last run handed out that were neither (not in memory) */
	size_t taken_clean;               /* that were clean (the zeroer's work) */
	size_t taken_populated;           /* and of those, populated */
	size_t taken_released;            /* that the arenas had released (the program faults them in again) */
	uint32_t busy_lo, busy_hi;        /* free pages the zeroer has claimed (claim.h): no purge there */
	unsigned owner;                   /* the arena it belongs to (arena.h) */
	int hugetlb;                      /* backed by hugetlb pages, not THP */
	int advice;                       /* its pages' advice (enum hz_fresh_advice) */
	uint64_t freed;                   /* when a block was last freed here (its arena's clock) */
	int tried;                        /* the dirty budget's pass has purged it (budget.c) */
	uint64_t used[HZ_CHUNK_WORDS];    /* page belongs to a live block */
	uint64_t dirty[HZ_CHUNK_WORDS];   /* page may hold non-zero bytes */
	uint64_t clean[HZ_CHUNK_WORDS];   /* page is free, in memory and zero */
	uint64_t populated[HZ_CHUNK_WORDS]; /* clean page the zeroer faulted in (not cleared): the reserve */
	uint64_t shared[HZ_CHUNK_WORDS];  /* free dirty page shared with a forked process: not pre-cleared */
	uint64_t released[HZ_CHUNK_WORDS]; /* free page the arenas released, not in memory since */
	uint64_t start[HZ_CHUNK_WORDS];   /* page is the first of a live block */
	uint32_t npages[HZ_CHUNK_PAGES];  /* at a block's first page: its length */
};

/* Maps a chunk's memory (hz_fresh_map: every page known zero) and
 * initialises c: with hugetlb set, from the hugetlb pool if it can give
 * 32 pages (c->hugetlb then 1). Returns 0, or ENOMEM (errno unchanged). */
int hz_chunk_init(struct hz_chunk *c, int hugetlb);
/* The chunk holding p, or NULL when no chunk does (a huge block is not
 * in a chunk): no lock. */
static inline struct hz_chunk *hz_chunk_of(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	return e & HZ_REG_HUGE ? NULL : (struct hz_chunk *)e;
}
/* Unmaps the chunk's memory. */
void hz_chunk_destroy(struct hz_chunk *c);

/* A run of npages (> 0) pages, first fit; NULL when no free run is long
 * enough. Its dirty pages stay dirty and the others read as zero until the
 * caller clears or writes them (hz_chunk_mark_dirty); taken_fresh counts
 * those that were not in memory. */
void *hz_chunk_alloc(struct hz_chunk *c, size_t npages);
/* The same, starting at a page index that is a multiple of align (a power
 * of two: chunks are chunk-aligned, so the address is too); with avoid
 * HZ_FIT_IN_MEMORY a run all in memory (dirty or clean) that never
 * overlaps the pages the zeroer has claimed (busy_lo, busy_hi); with
 * HZ_FIT_AWAY any run that does not overlap them: NULL when there is
 * none. */
enum hz_fit { HZ_FIT_ANY, HZ_FIT_IN_MEMORY, HZ_FIT_AWAY };
void *hz_chunk_alloc_avoiding(struct hz_chunk *c, size_t npages, size_t align, int avoid);
/* The length in pages of the live block starting at p, or 0 when p is not
 * the start of a live block of this chunk (a foreign pointer, or one freed
 * already). */
size_t hz_chunk_block_pages(const struct hz_chunk *c, const void *p);
/* Frees the live block at p (hz_chunk_block_pages(c, p) != 0): its pages
 * become free and dirty. Returns its length in pages. */
size_t hz_chunk_free(struct hz_chunk *c, void *p);

/* Resizes the live block at p in place to npages (> 0): shrinking frees
 * its tail (dirty); growing takes the free pages right after it, marked
 * dirty (the program writes them). Returns 0, or -1 when the pages after
 * it are not free (nothing changes). */
int hz_chunk_resize(struct hz_chunk *c, void *p, size_t npages);

/* How calloc zeroes a dirty run: 0 clears it in place (on this machine
 * 2-3x faster than the kernel's refault, bench/calloc_bench), 1 releases
 * it with MADV_DONTNEED for the kernel to fault zero pages back in. Set
 * once by hz_large_setup. */
extern int hz_calloc_release;
/* How calloc zeroes the dirty runs of a live block: decided under the
 * arena lock (hz_chunk_zero_plan, which only reads the chunk), carried out
 * after it (hz_chunk_zero_runs: the block is the caller's, and the chunk's
 * base and kind never change), so other threads of the arena do not wait
 * for a clear of up to 32 MiB. Runs are page indices in execution order;
 * when the block's first page is dirty, its run is last and hinted at it. */
#define HZ_ZERO_RUNS 16
struct hz_zero_plan {
	unsigned n;
	int hinted;
	uint32_t lo[HZ_ZERO_RUNS], hi[HZ_ZERO_RUNS];
	size_t known_zero; /* bytes of the block left as they were: zero */
};
void hz_chunk_zero_plan(const struct hz_chunk *c, const void *p, struct hz_zero_plan *plan);
void hz_chunk_zero_runs(const struct hz_chunk *c, const struct hz_zero_plan *plan, void *p);
/* Both at once, and the runs marked known zero: returns the bytes it did
 * not have to clear. */
size_t hz_chunk_calloc_clear(struct hz_chunk *c, void *p);
/* Marks the pages of the live block at p dirty (the caller wrote them or
 * will: a block handed out is dirty from then on). */
void hz_chunk_mark_dirty(struct hz_chunk *c, void *p);

/* Whether any page of [lo, hi) is in memory (dirty, or free and clean). */
int hz_chunk_any_in_memory(const struct hz_chunk *c, size_t lo, size_t hi);

/* Pages of the chunk that are free and in state (c->dirty or c->clean),
 * counted from the bitmaps (c->dirty_free and c->clean_free keep the same
 * figures as they change). */
size_t hz_chunk_count_free(const struct hz_chunk *c, const uint64_t *state);

/* ---- for the zeroer (claim.h, work.h), lock held ---- */

/* The first run of free pages at or after page `from`, within one huge
 * page, that are dirty (want_dirty) or neither dirty nor clean; 0 and the
 * run in [*lo, *hi), or -1 when there is none. */
int hz_chunk_next_run(const struct hz_chunk *c, int want_dirty, size_t from, size_t *lo, size_t *hi);
/* Pages [lo, hi), free and now zero in memory, become clean; populated
 * when the zeroer faulted them in rather than cleared them. */
void hz_chunk_set_clean(struct hz_chunk *c, size_t lo, size_t hi, int populated);
/* Free dirty pages [lo, hi) are shared copy-on-write with a forked
 * process: left to calloc (a clear would only copy them), until taken or
 * released. */
void hz_chunk_set_shared(struct hz_chunk *c, size_t lo, size_t hi);
/* Free pages [lo, hi) are claimed by the zeroer ([0, 0): none). */
static inline void hz_chunk_set_busy(struct hz_chunk *c, size_t lo, size_t hi)
{
	c->busy_lo = (uint32_t)lo;
	c->busy_hi = (uint32_t)hi;
}

#pragma GCC visibility pop

#endif
