/* The dirty budget (budget.c). */
#include "../os/os.h"
#include "allocator.h"

size_t hz_budget_dirty_max;
uint64_t hz_budget_decay_ns;
size_t hz_budget_reserve_max;
int hz_budget_retain = 1;
int hz_budget_ticked;
/* As configured, before a cgroup's limit bounds them. */
static size_t dirty_max_cfg, reserve_cfg;

/* Where every mapping is charged in full (overcommit mode 2, an
 * address-space rlimit), what the arenas keep free at most; under an
 * rlimit, at most an eighth of it too. */
#define FITTED_DIRTY_MAX ((size_t)16 << 20)

void hz_budget_setup(size_t dirty_max, uint64_t decay_ms, size_t reserve)
{
	dirty_max_cfg = dirty_max;
	reserve_cfg = reserve;
	hz_budget_decay_ns = decay_ms * 1000000u;
}

size_t hz_budget_fit(void)
{
	size_t limit = __atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED);
	size_t dirty = dirty_max_cfg, reserve = __atomic_load_n(&reserve_cfg, __ATOMIC_RELAXED);
	if (hz_huge_fitted) {
		size_t as = hz_limits.as < hz_limits.data ? hz_limits.as : hz_limits.data;
		dirty = dirty < FITTED_DIRTY_MAX ? dirty : FITTED_DIRTY_MAX;
		dirty = dirty < as / 8 ? dirty : as / 8;
		reserve = 0;
	}
	if (limit != HZ_LIMIT_NONE) {
		dirty = dirty < limit / 8 ? dirty : limit / 8;
		reserve = reserve < limit / 32 ? reserve : limit / 32;
	}
	__atomic_store_n(&hz_budget_dirty_max, dirty, __ATOMIC_RELAXED);
	__atomic_store_n(&hz_budget_reserve_max, reserve, __ATOMIC_RELAXED);
	return limit;
}

void hz_budget_no_reserve(void)
{
	__atomic_store_n(&reserve_cfg, 0, __ATOMIC_RELAXED);
	hz_budget_fit();
}

/* The cache's least recently freed block the zeroer is not working on;
 * NULL when there is none. */
static struct hz_huge **oldest_cached(struct hz_arena *a)
{
	struct hz_huge **hp = NULL;
	for (struct hz_huge **pp = &a->cache; *pp; pp = &(*pp)->next)
		if (!hz_claim_holds(a, *pp))
			hp = pp;
	return hp;
}

/* Unmaps a's least recently retained block. */
static void unmap_oldest_retained(struct hz_arena *a)
{
	struct hz_huge **hp = &a->retained;
	while ((*hp)->next)
		hp = &(*hp)->next;
	struct hz_huge *h = *hp;
	*hp = NULL;
	a->retained_bytes -= h->mapped;
	hz_huge_destroy(h);
}

/* h's pages given back, its mapping retained where it may be (retain
 * set), else unmapped (allocator.h, HZ_RETAINED_MAX). Not one whose
 * protection the program changed: MADV_DONTNEED keeps a mapping's
 * protection and advice, which munmap ends. */
static void release(struct hz_arena *a, struct hz_huge *h, int retain)
{
	if (!retain || !hz_budget_retain || hz_huge_fitted || h->mapped > HZ_RETAINED_MAX ||
	    __atomic_load_n(&h->program_protected, __ATOMIC_RELAXED) || hz_os_dontneed(h->base, h->mapped)) {
		hz_huge_destroy(h);
		return;
	}
	h->dirty = 0; /* it reads as zero */
	h->cleared = 0;
	h->shared = 0; /* no page left to share with a forked process */
	h->next = a->retained;
	a->retained = h;
	a->retained_bytes += h->mapped;
	while (a->retained_bytes > HZ_RETAINED_MAX)
		unmap_oldest_retained(a);
}

/* Releases the cached block *hp, counted; retained where retain is set
 * and it may be. */
static size_t evict(struct hz_arena *a, struct hz_huge **hp, int retain)
{
	struct hz_huge *h = *hp;
	size_t bytes = h->mapped;
	*hp = h->next;
	a->cached -= bytes;
	a->n.purged += bytes;
	a->evicted += bytes;
	a->n.unused += h->dirty ? h->cleared : h->mapped;
	a->cleared.wasted += h->dirty ? h->cleared : h->mapped;
	release(a, h, retain);
	return bytes;
}

void hz_budget_unmap_retained(struct hz_arena *a)
{
	while (a->retained)
		unmap_oldest_retained(a);
}

struct hz_huge *hz_budget_take_retained(struct hz_arena *a, size_t usable, size_t mapped)
{
	struct hz_huge **best = NULL;
	for (struct hz_huge **pp = &a->retained; *pp; pp = &(*pp)->next)
		if ((*pp)->mapped >= usable && (*pp)->mapped <= mapped + mapped / 4 &&
		    (!best || (*pp)->mapped < (*best)->mapped))
			best = pp;
	if (!best)
		return NULL;
	struct hz_huge *h = *best;
	*best = h->next;
	a->retained_bytes -= h->mapped;
	a->n.retained_taken++;
	h->next = NULL;
	h->dirty = 1; /* the program writes it */
	return h;
}

/* Cuts the cached block h to its first `mapped` bytes, counted as evict's. */
static void shorten(struct hz_arena *a, struct hz_huge *h, size_t mapped)
{
	size_t bytes = h->mapped - mapped;
	size_t cleared = h->cleared;
	hz_huge_cut(h, mapped);
	a->cached -= bytes;
	a->n.purged += bytes;
	a->evicted += bytes;
	a->n.unused += h->dirty ? cleared - h->cleared : bytes;
	a->cleared.wasted += h->dirty ? cleared - h->cleared : bytes;
}

/* Releases a's free memory, least recently freed first, whether a cached
 * huge block (released, retained) or a chunk's whole free 2 MiB blocks, until it
 * holds at most `keep` bytes or nothing more can go. The chunks' blocks
 * go in one batch, however many chunks they are in. */
static void release_oldest(struct hz_arena *a, size_t keep)
{
	struct hz_purge g; /* 5 KiB */
	hz_purge_begin(&g);
	hz_arena_drop_kept(a); /* into their chunks, where they can be released */
	size_t held = hz_arena_free_bytes(a);
	for (unsigned k = 0; k < a->nchunks; k++)
		a->chunks[k]->tried = 0;
	while (held > keep) {
		struct hz_huge **hp = oldest_cached(a);
		struct hz_chunk *c = NULL;
		for (unsigned k = 0; k < a->nchunks; k++)
			if (!a->chunks[k]->tried && a->chunks[k]->dirty_free + a->chunks[k]->clean_free >= HZ_HUGE_PAGES &&
			    (!c || a->chunks[k]->freed < c->freed))
				c = a->chunks[k];
		if (c && (!hp || c->freed <= (*hp)->freed)) {
			size_t got = hz_purge_gather(&g, c, 0, held - keep);
			held -= got < held ? got : held;
			c->tried = 1; /* what is left there is in partial huge pages */
		} else if (hp) {
			size_t over = hz_round_up(held - keep, HZ_HUGE_SIZE), was = a->cached;
			if ((*hp)->mapped > over && (*hp)->mapped % HZ_HUGE_SIZE == 0)
				shorten(a, *hp, (*hp)->mapped - over); /* its head kept */
			else
				evict(a, hp, 1);
			held -= was - a->cached < held ? was - a->cached : held;
		} else {
			break;
		}
	}
	hz_arena_count_purge(a, &g.total, hz_purge_flush(&g));
}

void hz_budget_freed(struct hz_arena *a, size_t bytes, struct hz_chunk *c, size_t lo, size_t hi,
		     struct hz_huge *h)
{
	if (a->takes[hz_take_class(bytes)] > 1)
		return;
	if (h) {
		for (struct hz_huge **hp = &a->cache; *hp; hp = &(*hp)->next)
			if (*hp == h) {
				size_t mapped = h->mapped;
				evict(a, hp, 1);
				/* Not a release the next block refaults: that one is larger. */
				a->evicted -= mapped < a->evicted ? mapped : a->evicted;
				break;
			}
		return;
	}
	struct hz_purge g; /* 5 KiB */
	hz_purge_begin(&g);
	hz_purge_gather_span(&g, c, lo, hi);
	hz_arena_count_purge(a, &g.total, hz_purge_flush(&g));
}

/* What the process's arenas hold free beyond its budget, counting a's own
 * held bytes; 0 when within it. */
static size_t over_budget(const struct hz_arena *a, size_t held)
{
	size_t others = hz_arenas_held() - __atomic_load_n(&a->held, __ATOMIC_RELAXED);
	size_t total = held + others;
	return total > hz_budget_dirty_max ? total - hz_budget_dirty_max : 0;
}

/* The process still holds excess bytes over its budget after a's pass:
 * the other arenas above their share of it release their oldest, each
 * down to its share at most, those whose lock is free now (a's lock is
 * held: never a wait, never a lock order). */
static void release_others(struct hz_arena *a, size_t excess)
{
	size_t share = hz_budget_dirty_max / HZ_ARENAS;
	for (int i = 0; i < HZ_ARENAS && excess; i++) {
		struct hz_arena *b = &hz_arenas[i];
		if (b == a || pthread_mutex_trylock(&b->lock))
			continue;
		size_t held = hz_arena_free_bytes(b);
		if (held > share) {
			size_t cut = held - share < excess ? held - share : excess;
			release_oldest(b, held - cut);
			size_t now = hz_arena_free_bytes(b);
			excess -= held - now < excess ? held - now : excess;
			hz_arena_publish(b, now);
		}
		pthread_mutex_unlock(&b->lock);
	}
}

void hz_budget_bound(struct hz_arena *a)
{
	size_t held = hz_arena_free_bytes(a);
	if (!held) {
		a->window_at = 0;
		hz_arena_publish(a, 0);
		return;
	}
	uint64_t now = hz_os_coarse_ns();
	if (!a->window_at) {
		a->window_at = now;
		a->low = held;
	}
	/* Over the budget, the process goes a quarter of it below, so that
	 * frees past it release many blocks in one batch, not one each. The
	 * freeing arena keeps its share of the budget at least (an idle arena
	 * holding the rest must not make every free here a release and every
	 * allocation a fault); what is still over goes from the others. */
	size_t over = over_budget(a, held);
	if (over) {
		size_t cut = over + hz_budget_dirty_max / 4, share = hz_budget_dirty_max / HZ_ARENAS;
		size_t keep = held > cut ? held - cut : 0;
		if (keep < share)
			keep = share < held ? share : held;
		if (keep < held)
			release_oldest(a, keep);
		held = hz_arena_free_bytes(a);
		hz_arena_publish(a, held);
		size_t still = over_budget(a, held);
		if (still)
			release_others(a, still);
	}
	if (now - a->window_at < hz_budget_decay_ns) {
		hz_arena_publish(a, held);
		return;
	}
	/* The window's end: what stayed free all through it goes back (the
	 * least recently freed first); what the program took and gave back
	 * meanwhile stays, for it to take again without a fault. */
	size_t unused = a->low < held ? a->low : held;
	if (unused)
		release_oldest(a, held - unused);
	a->missed = 0; /* the reserve refills only once blocks are taken fresh again */
	a->populated.wasted /= 2; /* a while on: the zeroer may try again */
	a->cleared.wasted /= 2;
	a->evicted /= 2;
	held = hz_arena_free_bytes(a);
	a->window_at = held ? now : 0;
	a->low = held;
	hz_arena_publish(a, held);
}

size_t hz_budget_trim(struct hz_arena *a)
{
	struct hz_purge g; /* 5 KiB */
	hz_purge_begin(&g);
	hz_arena_quiesce(a);
	hz_arena_drop_kept(a);
	for (unsigned k = 0; k < a->nchunks; k++)
		hz_purge_gather(&g, a->chunks[k], 1, SIZE_MAX);
	size_t bytes = hz_arena_count_purge(a, &g.total, hz_purge_flush(&g));
	a->low = 0;
	while (a->cache)
		bytes += evict(a, &a->cache, 0);
	hz_budget_unmap_retained(a);
	a->missed = 0; /* what was trimmed is not refilled until blocks are wanted again */
	hz_arena_publish(a, hz_arena_free_bytes(a));
	return bytes;
}
