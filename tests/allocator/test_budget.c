/* The arenas' budget (budget.c) and the arena's side of the claim
 * (arena.c), linked with the budget and the rooms below it only: what
 * goes back to the kernel first (least recently freed, a chunk's whole
 * huge pages or a cached huge block), how much stays, the decay, a claimed
 * block never unmapped, released huge blocks retained, a handout that
 * waits for the zeroer's clear, and
 * malloc_trim's wait for the claim to end. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "../../allocator/allocator.h"

#define MiB ((size_t)1 << 20)

/* A chunk of a whose first n huge pages were written and freed, at a's
 * clock's next tick. */
static struct hz_chunk *chunk_freed(struct hz_arena *a, size_t n)
{
	cr_assert_eq(hz_arena_grow(a), 0);
	struct hz_chunk *c = a->chunks[a->nchunks - 1];
	pthread_mutex_lock(&a->lock);
	unsigned char *p = hz_chunk_alloc(c, n * HZ_HUGE_PAGES);
	cr_assert_eq(p, c->base);
	hz_chunk_mark_dirty(c, p);
	memset(p, 0x42, n * HZ_HUGE_SIZE);
	hz_chunk_free(c, p);
	c->freed = ++a->frees;
	pthread_mutex_unlock(&a->lock);
	return c;
}

/* n huge pages of a new chunk of a freed, then the budget's pass after
 * the free. */
static void freed_and_bound(struct hz_arena *a, size_t n)
{
	chunk_freed(a, n);
	pthread_mutex_lock(&a->lock);
	hz_budget_bound(a);
	pthread_mutex_unlock(&a->lock);
}

/* A huge block of a, written and put in its cache, at the next tick. */
static struct hz_huge *cached(struct hz_arena *a, size_t bytes)
{
	struct hz_huge *h = hz_huge_map(bytes, bytes, (unsigned)(a - hz_arenas));
	cr_assert_not_null(h);
	memset(h->base, 0x24, bytes);
	pthread_mutex_lock(&a->lock);
	h->freed = ++a->frees;
	h->next = a->cache;
	a->cache = h;
	a->cached += bytes;
	pthread_mutex_unlock(&a->lock);
	return h;
}

static int in_cache(struct hz_arena *a, struct hz_huge *h)
{
	for (struct hz_huge *q = a->cache; q; q = q->next)
		if (q == h)
			return 1;
	return 0;
}

Test(budget, least_recently_freed_first)
{
	struct hz_arena *a = &hz_arenas[1];
	hz_budget_decay_ns = (uint64_t)3600 * 1000000000u;
	hz_budget_dirty_max = 12 * MiB;
	struct hz_huge *h1 = cached(a, 4 * MiB);        /* freed first */
	struct hz_chunk *c = chunk_freed(a, 1);          /* then 2 MiB of a chunk */
	struct hz_huge *h2 = cached(a, 4 * MiB);        /* last */
	pthread_mutex_lock(&a->lock);
	cr_assert_eq(hz_arena_free_bytes(a), 10 * MiB);
	hz_budget_bound(a);
	cr_assert_eq(hz_arena_free_bytes(a), 10 * MiB, "within the budget: all kept");
	/* Over it, a quarter of it below: 8 MiB less 2. */
	hz_budget_dirty_max = 8 * MiB;
	hz_budget_bound(a);
	cr_assert(!in_cache(a, h1), "the oldest, a huge block, released first");
	cr_assert(in_cache(a, h2));
	cr_assert_eq(c->dirty_free, HZ_HUGE_PAGES, "the chunk's pages kept: 6 MiB is 8 less a quarter");
	hz_budget_dirty_max = 4 * MiB; /* 3 MiB kept at most */
	hz_budget_bound(a);
	cr_assert_eq(c->dirty_free, 0, "the chunk's huge page next");
	cr_assert(in_cache(a, h2), "the newest shortened, not unmapped");
	cr_assert_eq(h2->mapped, 2 * MiB, "its head kept, whole huge pages");
	cr_assert_eq(hz_arena_free_bytes(a), 2 * MiB);
	cr_assert_eq(a->n.purged, 8 * MiB);
	cr_assert_eq(a->n.purges, 1, "the chunk in one batch");
	cr_assert_eq(hz_budget_trim(a), 2 * MiB);
	cr_assert_null(a->cache);
	pthread_mutex_unlock(&a->lock);
}

/* Past the budget, the blocks of every chunk that must go leave in one
 * system call, not one a chunk nor one a block. */
Test(budget, many_chunks_one_batch)
{
	struct hz_arena *a = &hz_arenas[1];
	hz_budget_decay_ns = (uint64_t)3600 * 1000000000u;
	hz_budget_dirty_max = 64 * MiB;
	struct hz_chunk *c[4];
	for (int k = 0; k < 4; k++)
		c[k] = chunk_freed(a, 4); /* 8 MiB each, the first the oldest */
	pthread_mutex_lock(&a->lock);
	hz_budget_bound(a);
	cr_assert_eq(a->n.purges, 0, "32 MiB is within 64");
	hz_budget_dirty_max = 8 * MiB; /* 24 MiB over: 26 go */
	hz_budget_bound(a);
	cr_assert_eq(a->n.purge_syscalls, 1, "%llu calls", (unsigned long long)a->n.purge_syscalls);
	cr_assert_eq(a->n.purge_ranges, 4, "one range a chunk, its huge pages merged");
	cr_assert_eq(a->n.purged, 26 * MiB);
	for (int k = 0; k < 3; k++)
		cr_assert_eq(c[k]->dirty_free, 0, "chunk %d: the oldest go whole", k);
	cr_assert_eq(c[3]->dirty_free, 3 * HZ_HUGE_PAGES, "the newest: its highest huge page");
	cr_assert_eq(hz_bits_count(c[3]->dirty, 3 * HZ_HUGE_PAGES, 4 * HZ_HUGE_PAGES), 0);
	cr_assert_eq(hz_budget_trim(a), 6 * MiB);
	cr_assert_eq(a->n.purge_syscalls, 2, "the trim: one more call");
	pthread_mutex_unlock(&a->lock);
}

/* The budget is the process's: an arena's free memory counts against the
 * others'. The arena that frees past it releases its own, down to its
 * share of the budget at least. */
Test(budget, one_budget_for_every_arena)
{
	hz_budget_decay_ns = (uint64_t)3600 * 1000000000u;
	hz_budget_dirty_max = 12 * MiB;
	struct hz_arena *a = &hz_arenas[0], *b = &hz_arenas[2];
	freed_and_bound(a, 4);
	cr_assert_eq(hz_arenas_held(), 8 * MiB, "within the budget: published, kept");
	chunk_freed(b, 4);
	pthread_mutex_lock(&b->lock);
	hz_budget_bound(b); /* 16 MiB: 4 over, 3 more below; b's share 3 MiB */
	cr_assert_eq(hz_arena_free_bytes(b), 2 * MiB, "b keeps its share, in whole huge pages");
	pthread_mutex_unlock(&b->lock);
	pthread_mutex_lock(&a->lock);
	cr_assert_eq(hz_arena_free_bytes(a), 8 * MiB, "a's kept");
	pthread_mutex_unlock(&a->lock);
	cr_assert_eq(hz_arenas_held(), 10 * MiB);
}

Test(budget, decay_releases_all_and_claimed_blocks_stay)
{
	struct hz_arena *a = &hz_arenas[2];
	hz_budget_dirty_max = (size_t)1 << 40;
	hz_budget_decay_ns = 0; /* expired at once */
	struct hz_huge *h = cached(a, 2 * MiB);
	struct hz_huge *k = cached(a, 2 * MiB);
	chunk_freed(a, 2);
	a->missed = 8 * MiB;
	pthread_mutex_lock(&a->lock);
	hz_claim_set(a, NULL, 0, 0, k, 0, HZ_HUGE_SIZE, 0);
	hz_budget_bound(a);
	cr_assert(!in_cache(a, h), "decayed");
	cr_assert(in_cache(a, k), "the zeroer's block is never released under it");
	cr_assert_eq(hz_arena_free_bytes(a), 2 * MiB);
	cr_assert_eq(a->missed, 0, "the reserve empties with the decay");
	hz_claim_end(HZ_HUGE_SIZE);
	hz_budget_bound(a);
	cr_assert_eq(hz_arena_free_bytes(a), 0);
	pthread_mutex_unlock(&a->lock);
}

/* At the end of a window of the delay, what stayed free all through it
 * goes back, no more: the 4 MiB the program took and gave back meanwhile
 * stay; the chunk's highest huge pages go first (first fit takes the
 * lowest). Pages released and handed out again are counted taken so. */
Test(budget, a_window_releases_what_stayed_free)
{
	struct hz_arena *a = &hz_arenas[0];
	hz_budget_dirty_max = (size_t)1 << 40;
	hz_budget_decay_ns = (uint64_t)3600 * 1000000000u;
	struct hz_chunk *c = chunk_freed(a, 4);
	pthread_mutex_lock(&a->lock);
	hz_budget_bound(a); /* the window begins: 8 MiB free */
	unsigned char *p = hz_chunk_alloc(c, 2 * HZ_HUGE_PAGES);
	cr_assert_eq(p, c->base);
	hz_chunk_mark_dirty(c, p);
	hz_arena_count_alloc(a, 4 * MiB, 0, 0);
	cr_assert_eq(a->low, 4 * MiB, "the low-water mark follows the handout");
	hz_chunk_free(c, p);
	hz_budget_bound(a);
	cr_assert_eq(hz_arena_free_bytes(a), 8 * MiB, "within the window: all kept");
	hz_budget_decay_ns = 0;
	hz_budget_bound(a);
	cr_assert_eq(hz_arena_free_bytes(a), 4 * MiB, "the window's end: the 4 MiB unused went");
	cr_assert_eq(a->n.purged, 4 * MiB);
	cr_assert_eq(hz_bits_count(c->dirty, 0, 2 * HZ_HUGE_PAGES), 2 * HZ_HUGE_PAGES, "the lowest kept");
	cr_assert_eq(hz_bits_count(c->dirty, 2 * HZ_HUGE_PAGES, 4 * HZ_HUGE_PAGES), 0, "the highest released");
	cr_assert_eq(a->low, 4 * MiB, "the next window begins with what is kept");
	cr_assert_not_null(hz_chunk_alloc(c, 4 * HZ_HUGE_PAGES));
	cr_assert_eq(c->taken_released, 2 * HZ_HUGE_PAGES, "the released pages counted taken again");
	pthread_mutex_unlock(&a->lock);
}

struct waiter {
	struct hz_arena *a;
	struct hz_chunk *c;
	int trim;
	uint64_t waited_ns;
	size_t trimmed;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;
	pthread_mutex_lock(&w->a->lock);
	uint64_t t0 = hz_os_now_ns();
	if (w->trim)
		w->trimmed = hz_budget_trim(w->a);
	else
		hz_arena_collide(w->a, w->c, 10, 20, NULL);
	w->waited_ns = hz_os_now_ns() - t0;
	pthread_mutex_unlock(&w->a->lock);
	return NULL;
}

/* A thread collides with (or trims under) the zeroer's claim; the claim
 * ends 50 ms later: the thread must have waited for it. */
static void waits_for_the_claim(int trim)
{
	struct hz_arena *a = &hz_arenas[3];
	hz_budget_dirty_max = (size_t)1 << 40;
	hz_budget_decay_ns = (uint64_t)3600 * 1000000000u;
	struct hz_chunk *c = chunk_freed(a, 1);
	pthread_mutex_lock(&a->lock);
	hz_claim_set(a, c, 0, 64, NULL, 0, 0, 0);
	pthread_mutex_unlock(&a->lock);
	struct waiter w = {a, c, trim, 0, 0};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, wait_main, &w), 0);
	for (int i = 0; i < 5000 && !__atomic_load_n(&hz_claim.taken, __ATOMIC_RELAXED); i++)
		usleep(1000);
	usleep(50 * 1000); /* the thread waits meanwhile */
	pthread_mutex_lock(&a->lock);
	cr_assert_eq(hz_claim.taken, 1, "the handout marked the piece taken");
	cr_assert_eq(hz_claim_end(32 * HZ_PAGE), HZ_CLAIM_ABANDONED);
	pthread_cond_broadcast(&a->claim_done);
	pthread_mutex_unlock(&a->lock);
	pthread_join(t, NULL);
	cr_assert_geq(w.waited_ns, 40 * 1000000u, "waited %llu ns", (unsigned long long)w.waited_ns);
	if (trim)
		cr_assert_eq(w.trimmed, HZ_HUGE_SIZE, "trimmed once the claim ended");
	cr_assert_eq(hz_claim_busy(a), 0);
}

Test(budget, a_handout_waits_for_the_clear)
{
	waits_for_the_claim(0);
}

Test(budget, trim_waits_for_the_claim)
{
	waits_for_the_claim(1);
}

/* What the freeing arena cannot release above its share comes from the
 * other arenas, their oldest first, none below its share. */
Test(budget, the_rest_from_the_other_arenas)
{
	hz_budget_decay_ns = (uint64_t)3600 * 1000000000u;
	hz_budget_dirty_max = 12 * MiB;
	struct hz_arena *a = &hz_arenas[0], *b = &hz_arenas[2];
	freed_and_bound(a, 6); /* 12 MiB: within the budget */
	chunk_freed(b, 2);
	pthread_mutex_lock(&b->lock);
	hz_budget_bound(b); /* 16 MiB: b down to its share (2 MiB), a gives 2 */
	cr_assert_eq(hz_arena_free_bytes(b), 2 * MiB);
	pthread_mutex_unlock(&b->lock);
	pthread_mutex_lock(&a->lock);
	cr_assert_eq(hz_arena_free_bytes(a), 10 * MiB, "a's oldest 2 MiB went");
	pthread_mutex_unlock(&a->lock);
	cr_assert_eq(hz_arenas_held(), 12 * MiB, "within the budget");
}

static int in_retained(struct hz_arena *a, struct hz_huge *h)
{
	for (struct hz_huge *q = a->retained; q; q = q->next)
		if (q == h)
			return 1;
	return 0;
}

static size_t resident_pages(const void *p, size_t bytes)
{
	size_t k = 0;
	cr_assert_eq(hz_os_count_resident(p, bytes / hz_page_size, &k), 0);
	return k;
}

/* A released huge block keeps its mapping, its pages gone, and the next
 * huge block that fits takes its addresses; one much larger is not taken
 * (its tail would have to be unmapped); malloc_trim unmaps them. */
Test(budget, released_huge_blocks_keep_their_mappings)
{
	struct hz_arena *a = &hz_arenas[1];
	hz_budget_dirty_max = (size_t)1 << 40;
	hz_budget_decay_ns = 0; /* released at the next pass */
	struct hz_huge *h = cached(a, 4 * MiB), *big = cached(a, 8 * MiB);
	cr_assert_eq(resident_pages(h->base, 4 * MiB), 4 * MiB / hz_page_size);
	pthread_mutex_lock(&a->lock);
	hz_budget_bound(a);
	cr_assert(!in_cache(a, h) && !in_cache(a, big), "released");
	cr_assert(in_retained(a, h) && in_retained(a, big), "retained");
	cr_assert_eq(a->retained_bytes, 12 * MiB);
	cr_assert_eq(a->n.purged, 12 * MiB, "counted as released");
	cr_assert_eq(hz_arena_free_bytes(a), 0, "nothing of it in memory");
	pthread_mutex_unlock(&a->lock);
	cr_assert(hz_os_mapped(h->base) && hz_os_mapped(h->base + 4 * MiB - 1), "still mapped");
	cr_assert_eq(resident_pages(h->base, 4 * MiB), 0, "its pages given back");
	cr_assert_eq(h->base[12345] | h->base[4 * MiB - 1], 0, "it reads as zero");
	cr_assert_eq(h->dirty, 0);

	pthread_mutex_lock(&a->lock);
	cr_assert_null(hz_budget_take_retained(a, 5 * MiB, 6 * MiB), "none fits 5 MiB but 8, a third more than 6");
	cr_assert_eq(hz_budget_take_retained(a, 3 * MiB, 4 * MiB), h, "the best fit");
	cr_assert_eq(a->retained_bytes, 8 * MiB);
	cr_assert_eq(a->n.retained_taken, 1);
	cr_assert_eq(h->dirty, 1, "handed out to be written");
	cr_assert_eq(hz_budget_take_retained(a, 7 * MiB, 8 * MiB), big);
	h->next = a->retained; /* back, for the trim */
	a->retained = h;
	a->retained_bytes += h->mapped;
	big->next = a->retained;
	a->retained = big;
	a->retained_bytes += big->mapped;
	unsigned char *hb = h->base, *bb = big->base;
	hz_budget_trim(a);
	cr_assert_null(a->retained);
	cr_assert_eq(a->retained_bytes, 0);
	pthread_mutex_unlock(&a->lock);
	cr_assert(!hz_os_mapped(hb) && !hz_os_mapped(bb), "malloc_trim unmaps them");
}

/* Past HZ_RETAINED_MAX, the least recently released go; where mappings
 * are charged in full, none is kept. */
Test(budget, retained_bounded_and_none_where_charged)
{
	struct hz_arena *a = &hz_arenas[2];
	hz_budget_dirty_max = (size_t)1 << 40;
	hz_budget_decay_ns = 0;
	size_t part = HZ_RETAINED_MAX / 2;
	struct hz_huge *b[3];
	unsigned char *base[3];
	for (int i = 0; i < 3; i++) { /* never written: only mapped */
		b[i] = hz_huge_map(part, part, (unsigned)(a - hz_arenas));
		cr_assert_not_null(b[i]);
		base[i] = b[i]->base;
		pthread_mutex_lock(&a->lock);
		b[i]->freed = ++a->frees;
		b[i]->next = a->cache;
		a->cache = b[i];
		a->cached += part;
		hz_budget_bound(a);
		pthread_mutex_unlock(&a->lock);
	}
	cr_assert_eq(a->retained_bytes, HZ_RETAINED_MAX);
	cr_assert(!in_retained(a, b[0]) && !hz_os_mapped(base[0]), "the first released unmapped");
	cr_assert(in_retained(a, b[1]) && in_retained(a, b[2]));

	hz_huge_fitted = 1;
	struct hz_huge *f = cached(a, 2 * MiB);
	unsigned char *fb = f->base;
	pthread_mutex_lock(&a->lock);
	hz_budget_bound(a);
	cr_assert(!in_cache(a, f) && !in_retained(a, f));
	pthread_mutex_unlock(&a->lock);
	cr_assert(!hz_os_mapped(fb), "unmapped where every mapping is charged");
	hz_huge_fitted = 0;
}
