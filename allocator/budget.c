/* The dirty budget (budget.h). */
#include "../os/os.h"
#include "budget.h"
#include "huge.h"
#include "limits.h"
#include "purge.h"

size_t hz_budget_dirty_max;
uint64_t hz_budget_decay_ns;
size_t hz_budget_reserve_max;
/* As configured, before a cgroup's limit bounds them. */
static size_t dirty_max_cfg, reserve_cfg;

/* Where every mapping is charged in full (overcommit mode 2), what the
 * arenas keep free at most. */
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
		dirty = dirty < FITTED_DIRTY_MAX ? dirty : FITTED_DIRTY_MAX;
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

/* Unmaps the cached block *hp, counted. */
static size_t evict(struct hz_arena *a, struct hz_huge **hp)
{
	struct hz_huge *h = *hp;
	size_t bytes = h->mapped;
	*hp = h->next;
	a->cached -= bytes;
	a->n.purged += bytes;
	a->n.unused += h->dirty ? h->cleared : h->mapped;
	a->cleared.wasted += h->dirty ? h->cleared : h->mapped;
	hz_huge_destroy(h);
	return bytes;
}

/* Releases a's free memory, least recently freed first, whether a cached
 * huge block (unmapped) or a chunk's whole free 2 MiB blocks (one batch):
 * all of it, or while over budget. */
static void release_oldest(struct hz_arena *a, int all)
{
	for (unsigned k = 0; k < a->nchunks; k++)
		a->chunks[k]->tried = 0;
	while (all || hz_arena_free_bytes(a) > hz_budget_dirty_max) {
		struct hz_huge **hp = oldest_cached(a);
		struct hz_chunk *c = NULL;
		for (unsigned k = 0; k < a->nchunks; k++)
			if (!a->chunks[k]->tried && a->chunks[k]->dirty_free + a->chunks[k]->clean_free >= HZ_HUGE_PAGES &&
			    (!c || a->chunks[k]->freed < c->freed))
				c = a->chunks[k];
		if (c && (!hp || c->freed <= (*hp)->freed)) {
			struct hz_purge_result r;
			size_t bytes = hz_purge_chunk(c, 0, &r);
			hz_arena_count_purge(a, &r, bytes);
			c->tried = 1; /* what is left there is in partial huge pages */
		} else if (hp) {
			evict(a, hp);
		} else {
			break;
		}
	}
}

void hz_budget_bound(struct hz_arena *a)
{
	size_t held = hz_arena_free_bytes(a);
	if (!held) {
		a->dirty_since = 0;
		return;
	}
	uint64_t now = hz_os_now_ns();
	if (!a->dirty_since)
		a->dirty_since = now;
	int expired = now - a->dirty_since >= hz_budget_decay_ns;
	if (held <= hz_budget_dirty_max && !expired)
		return;
	release_oldest(a, expired);
	if (expired) {
		a->missed = 0; /* the reserve stays empty until blocks are wanted again */
		a->populated.wasted /= 2; /* idle a while: the zeroer may try again */
		a->cleared.wasted /= 2;
	}
	a->dirty_since = hz_arena_free_bytes(a) ? now : 0;
}

size_t hz_budget_trim(struct hz_arena *a)
{
	size_t bytes = 0;
	hz_arena_quiesce(a);
	for (unsigned k = 0; k < a->nchunks; k++) {
		struct hz_purge_result r;
		size_t b = hz_purge_chunk(a->chunks[k], 1, &r);
		bytes += hz_arena_count_purge(a, &r, b);
	}
	while (a->cache)
		bytes += evict(a, &a->cache);
	a->missed = 0; /* what was trimmed is not refilled until blocks are wanted again */
	return bytes;
}
