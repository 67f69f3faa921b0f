/* The dirty budget (arena.h): how much free dirty memory an arena keeps,
 * for how long, and what goes back to the kernel first. A buffer freed
 * and reused all the time stays; memory left alone goes. Whole free 2 MiB
 * blocks go in one batch a chunk, never splitting a huge page; partial
 * ones stay until malloc_trim. */
#include "arena.h"
#include "background.h"
#include "huge.h"

size_t hz_dirty_max;
uint64_t hz_dirty_decay_ns;

size_t hz_arena_dirty(const struct hz_arena *a)
{
	size_t pages = 0;
	for (unsigned k = 0; k < a->nchunks; k++)
		pages += a->chunks[k]->dirty_free + a->chunks[k]->clean_free;
	return (pages << HZ_PAGE_SHIFT) + a->cached;
}

/* The cache's least recently freed block the zeroer is not working on;
 * NULL when there is none. */
static struct hz_huge **oldest_cached(struct hz_arena *a)
{
	struct hz_huge **hp = NULL;
	for (struct hz_huge **pp = &a->cache; *pp; pp = &(*pp)->next)
		if (!hz_zeroer_claims(*pp))
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
	a->purged += bytes;
	hz_huge_destroy(h);
	return bytes;
}

/* Releases a's free dirty memory, least recently freed first, whether a
 * cached huge block (unmapped) or a chunk's whole free 2 MiB blocks (one
 * batch): all of it, or while over budget. */
static void release_oldest(struct hz_arena *a, int all)
{
	for (unsigned k = 0; k < a->nchunks; k++)
		a->chunks[k]->tried = 0;
	while (all || hz_arena_dirty(a) > hz_dirty_max) {
		struct hz_huge **hp = oldest_cached(a);
		struct hz_chunk *c = NULL;
		for (unsigned k = 0; k < a->nchunks; k++)
			if (!a->chunks[k]->tried && a->chunks[k]->dirty_free + a->chunks[k]->clean_free >= HZ_HUGE_PAGES &&
			    (!c || a->chunks[k]->freed < c->freed))
				c = a->chunks[k];
		if (c && (!hp || c->freed <= (*hp)->freed)) {
			struct hz_release_result r;
			size_t bytes = hz_chunk_purge(c, 0, &r);
			hz_arena_count_purge(a, &r, bytes);
			c->tried = 1; /* what is left there is in partial huge pages */
		} else if (hp) {
			evict(a, hp);
		} else {
			break;
		}
	}
}

void hz_arena_bound(struct hz_arena *a)
{
	size_t dirty = hz_arena_dirty(a);
	if (!dirty) {
		a->dirty_since = 0;
		return;
	}
	uint64_t now = hz_os_now_ns();
	if (!a->dirty_since)
		a->dirty_since = now;
	int expired = now - a->dirty_since >= hz_dirty_decay_ns;
	if (dirty <= hz_dirty_max && !expired)
		return;
	release_oldest(a, expired);
	if (expired)
		a->missed = 0; /* the reserve stays empty until blocks are wanted again */
	a->dirty_since = hz_arena_dirty(a) ? now : 0;
}

size_t hz_arena_trim(struct hz_arena *a)
{
	size_t bytes = 0;
	hz_zeroer_quiesce(a);
	for (unsigned k = 0; k < a->nchunks; k++) {
		struct hz_release_result r;
		size_t b = hz_chunk_purge(a->chunks[k], 1, &r);
		bytes += hz_arena_count_purge(a, &r, b);
	}
	while (a->cache)
		bytes += evict(a, &a->cache);
	return bytes;
}
