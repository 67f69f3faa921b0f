/* The zeroer's claim (claim.c), linked with the claim and the rooms below
 * it only (chunk, huge blocks' mappings, fresh memory, the registry, the
 * engine, the OS): a piece overlapped or not, taken by a handout (a clear
 * waited for, a population not), stepped around by the allocator,
 * abandoned once taken, published when not, and after a fork only the
 * pages this process maps alone. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../allocator/allocator.h"

/* The claim names its arena without calling it: any two addresses. */
static char arena_a, arena_b;
#define A ((struct hz_arena *)&arena_a)
#define B ((struct hz_arena *)&arena_b)

static struct hz_chunk chunk;

/* A chunk whose pages [0, n) are free and dirty (written, then freed). */
static struct hz_chunk *dirty_chunk(size_t n)
{
	struct hz_chunk *c = &chunk;
	cr_assert_eq(hz_chunk_init(c, 0), 0);
	unsigned char *p = hz_chunk_alloc(c, n);
	cr_assert_eq(p, c->base);
	hz_chunk_mark_dirty(c, p);
	memset(p, 0x77, n * HZ_PAGE);
	cr_assert_eq(hz_chunk_free(c, p), n);
	cr_assert_eq(c->dirty_free, n);
	return c;
}

static void done(struct hz_chunk *c)
{
	hz_claim_reset();
	hz_chunk_destroy(c);
}

Test(claim, overlap_taken_waited_and_abandoned)
{
	struct hz_chunk *c = dirty_chunk(64);
	hz_claim_set(A, c, 32, 40, NULL, 0, 0, 0);
	cr_assert_eq(c->busy_lo, 32);
	cr_assert_eq(c->busy_hi, 40);
	cr_assert(hz_claim_overlaps(A, c, 30, 33, NULL));
	cr_assert(hz_claim_overlaps(A, c, 39, 41, NULL));
	cr_assert(!hz_claim_overlaps(A, c, 40, 50, NULL), "ends where the piece starts");
	cr_assert(!hz_claim_overlaps(A, c, 0, 32, NULL));
	cr_assert(!hz_claim_overlaps(B, c, 32, 40, NULL), "another arena's pages");
	cr_assert(!hz_claim_collide(A, c, 0, 32, NULL), "no overlap: nothing taken");
	cr_assert_eq(hz_claim.taken, 0);
	uint64_t waits = hz_claim_waits;
	cr_assert_eq(hz_claim_collide(A, c, 35, 36, NULL), 1, "a clear must be waited for");
	cr_assert_eq(hz_claim.taken, 1);
	cr_assert_eq(hz_claim_waits, waits + 1);
	cr_assert_eq(hz_claim_end(HZ_PAGE), HZ_CLAIM_ABANDONED, "taken: never published");
	cr_assert_eq(c->clean_free, 0);
	cr_assert_eq(c->dirty_free, 64, "the pages stay dirty");
	cr_assert_eq(c->busy_hi, 0, "the chunk's busy range ends with the claim");
	cr_assert(!hz_claim_overlaps(A, c, 32, 40, NULL), "no claim");
	done(c);
}

Test(claim, population_is_taken_without_a_wait)
{
	struct hz_chunk *c = dirty_chunk(8);
	hz_claim_set(A, c, 100, 200, NULL, 0, 0, 1);
	uint64_t waits = hz_claim_waits;
	cr_assert_eq(hz_claim_collide(A, c, 150, 151, NULL), 0, "a population changes no byte");
	cr_assert_eq(hz_claim.taken, 1);
	cr_assert_eq(hz_claim_waits, waits);
	cr_assert_eq(hz_claim_end(100 * HZ_PAGE), HZ_CLAIM_ABANDONED);
	cr_assert_eq(c->clean_free, 0);
	done(c);
}

Test(claim, stepped_around)
{
	struct hz_chunk *c = dirty_chunk(64);
	hz_claim_set(A, c, 0, 16, NULL, 0, 0, 0);
	/* A run all in memory away from the busy pages: after them. */
	unsigned char *p = hz_chunk_alloc_avoiding(c, 16, 1, HZ_FIT_IN_MEMORY);
	cr_assert_eq(p, c->base + 16 * HZ_PAGE);
	cr_assert(!hz_claim_overlaps(A, c, 16, 32, NULL));
	cr_assert_null(hz_chunk_alloc_avoiding(c, 40, 1, HZ_FIT_IN_MEMORY), "no run in memory that avoids them");
	hz_chunk_free(c, p);
	cr_assert_eq(hz_claim_end(16 * HZ_PAGE), HZ_CLAIM_PUBLISHED);
	done(c);
}

Test(claim, published_clean)
{
	struct hz_chunk *c = dirty_chunk(32);
	hz_claim_set(A, c, 0, 16, NULL, 0, 0, 0);
	cr_assert_eq(hz_claim.extent, 32 * HZ_PAGE, "the dirty memory at hand");
	memset(c->base, 0, 16 * HZ_PAGE); /* what the zeroer does */
	cr_assert_eq(hz_claim_end(16 * HZ_PAGE), HZ_CLAIM_PUBLISHED);
	cr_assert_eq(c->clean_free, 16);
	cr_assert_eq(c->dirty_free, 16);
	cr_assert_eq(hz_chunk_count_free(c, c->clean), 16);
	cr_assert_eq(hz_chunk_count_free(c, c->dirty), 16);
	done(c);
}

Test(claim, after_fork_only_pages_alone)
{
	struct hz_chunk *c = dirty_chunk(16);
	hz_claim_set(A, c, 0, 16, NULL, 0, 0, 0);
	hz_claim.checked = 1;
	memset(hz_claim.alone, 0, sizeof hz_claim.alone);
	hz_claim.alone[0] = 0x00ff; /* pages 0-7 alone, 8-15 shared */
	cr_assert(hz_claim_alone(7));
	cr_assert(!hz_claim_alone(8));
	cr_assert_eq(hz_claim_end(8 * HZ_PAGE), HZ_CLAIM_PUBLISHED);
	cr_assert_eq(c->clean_free, 8);
	cr_assert_eq(c->dirty_free, 8, "shared pages stay dirty");
	size_t lo, hi;
	cr_assert_eq(hz_chunk_next_run(c, 1, 0, &lo, &hi), -1, "shared pages are not claimed for a clear again");
	done(c);
}

Test(claim, huge_block_pieces)
{
	struct hz_huge *h = hz_huge_map(2 * HZ_HUGE_SIZE, 2 * HZ_HUGE_SIZE, 0);
	cr_assert_not_null(h);
	cr_assert(h->dirty);
	h->live = 0;
	hz_claim_set(A, NULL, 0, 0, h, 0, HZ_HUGE_SIZE, 0);
	cr_assert(hz_claim_holds(A, h), "not to be unmapped");
	cr_assert(!hz_claim_holds(B, h));
	cr_assert(hz_claim_overlaps(A, NULL, 0, 0, h));
	cr_assert_eq(hz_claim_end(HZ_HUGE_SIZE), HZ_CLAIM_PUBLISHED);
	cr_assert_eq(h->cleared, HZ_HUGE_SIZE, "its first half known zero");
	cr_assert(h->dirty);
	hz_claim_set(A, NULL, 0, 0, h, HZ_HUGE_SIZE, HZ_HUGE_SIZE, 0);
	cr_assert_eq(hz_claim_end(HZ_HUGE_SIZE), HZ_CLAIM_PUBLISHED);
	cr_assert(!h->dirty, "all of it known zero");
	cr_assert_eq(h->cleared, 0);
	h->dirty = 1;
	hz_claim_set(A, NULL, 0, 0, h, 0, HZ_HUGE_SIZE, 0);
	cr_assert_eq(hz_claim_end(HZ_PAGE), HZ_CLAIM_SHARED, "cleared in part: shared with a forked process");
	cr_assert(h->shared);
	cr_assert(!hz_claim_holds(A, h));
	hz_claim_set(A, NULL, 0, 0, h, 0, HZ_HUGE_SIZE, 0);
	cr_assert(hz_claim_busy(A), "trim finds the arena busy");
	cr_assert(!hz_claim_busy(B));
	cr_assert_eq(hz_claim_end(HZ_HUGE_SIZE), HZ_CLAIM_ABANDONED, "busy marks it taken");
	hz_huge_destroy(h);
}
