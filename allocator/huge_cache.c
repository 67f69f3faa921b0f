/* Huge blocks served from their arenas' caches (huge_cache.c). */
#include "../obs/obs.h"
#include "allocator.h"

/* The cached block that fits `usable` bytes best, out of a's cache; one
 * more than a quarter larger than `mapped` is cut to it (a's lock held).
 * Not the one a stalled zeroer is clearing (claim.c): no wait for it. */
static struct hz_huge *cache_take(struct hz_arena *a, size_t usable, size_t mapped)
{
	struct hz_huge **best = NULL;
	int stalled = hz_claim_stalled(a);
	for (struct hz_huge **pp = &a->cache; *pp; pp = &(*pp)->next)
		if ((*pp)->mapped >= usable && (!best || (*pp)->mapped < (*best)->mapped) &&
		    !(stalled && hz_claim_holds(a, *pp)))
			best = pp;
	if (!best)
		return NULL;
	struct hz_huge *h = *best;
	*best = h->next;
	a->cached -= h->mapped;
	hz_arena_collide(a, NULL, 0, 0, h); /* before the cut unmaps any of it */
	if (h->mapped > mapped && h->mapped - mapped > mapped / 4)
		hz_huge_cut(h, mapped);
	return h;
}

/* The cached block of a that fits (cache_take), a's lock then held; NULL,
 * the lock not held, when none does, or with try set when the lock is
 * busy. */
static struct hz_huge *take_locked(struct hz_arena *a, int try, size_t usable, size_t mapped)
{
	if (!try)
		pthread_mutex_lock(&a->lock);
	else if (pthread_mutex_trylock(&a->lock))
		return NULL;
	struct hz_huge *h = cache_take(a, usable, mapped);
	if (!h)
		pthread_mutex_unlock(&a->lock);
	return h;
}

/* h handed out with usable bytes, counted (a's lock held); its first
 * known_zero bytes need no clear; fresh when it is a new mapping. */
static void hand_out(struct hz_arena *a, struct hz_huge *h, size_t usable, int zero, size_t known_zero,
		     int fresh)
{
	h->size = usable;
	h->live = 1;
	__atomic_store_n(&h->program_protected, 0, __ATOMIC_RELAXED);
	a->allocated += usable;
	hz_arena_count_alloc(a, usable, fresh ? usable : 0, zero);
	if (zero) {
		known_zero = known_zero < usable ? known_zero : usable;
		a->n.known_zero += known_zero;
		a->n.cleared_caller += usable - known_zero;
	}
}

/* The first bytes of a cached block that read as zero. */
static size_t known_zero(const struct hz_huge *h)
{
	return h->dirty ? h->cleared : h->mapped;
}

/* A recycled block's clear, hinted at its first page (cleared last, kept
 * in cache); from HZ_HELPERS_MIN the rest split over the helpers first. */
static void zero_recycled(unsigned char *p, size_t n)
{
	if (n >= HZ_HELPERS_MIN + HZ_JOB_STEP) {
		size_t rest = n - HZ_JOB_STEP;
		unsigned k;
		if (hz_helpers_fill(p + HZ_JOB_STEP, 0, rest, 1, NULL, &k)) {
			hz_count_kernel(k, rest);
			hz_zero_hinted_counted(p, HZ_JOB_STEP, p);
			return;
		}
	}
	hz_zero_hinted_counted(p, n, p);
}

void *hz_huge_cache_alloc(size_t size, int zero, struct hz_handout *out)
{
	size_t usable = hz_round_up(size, HZ_PAGE), mapped = hz_round_up(size, HZ_HUGE_SIZE);
	if (size <= HZ_RUN_MAX || hz_huge_fitted) /* no chunk could be had: as little as will do */
		mapped = usable;
	/* The thread's arena's cache, then the others' whose lock is free at
	 * once (never waiting on a lock a SCHED_IDLE zeroer may hold while the
	 * machine is busy): a block another thread freed is in memory, a new
	 * mapping faults in. */
	struct hz_arena *home = hz_arena_of_thread(), *a = home;
	struct hz_huge *h = take_locked(a, 0, usable, mapped);
	for (unsigned i = 1; !h && i < HZ_ARENAS; i++)
		h = take_locked(a = &hz_arenas[((unsigned)(home - hz_arenas) + i) % HZ_ARENAS], 1, usable, mapped);
	size_t kz = 0;
	if (h) {
		kz = known_zero(h);
		/* What the zeroer cleared of it: paid for by a calloc only. */
		if (zero)
			a->cleared.paid += kz;
		else
			a->cleared.wasted += kz;
		hand_out(a, h, usable, zero, kz, 0);
		pthread_mutex_unlock(&a->lock);
		/* Recycled memory is cleared here, hinted at its first page,
		 * instead of being faulted in page by page by the kernel; what
		 * the zeroer cleared already is left alone. */
		if (zero && kz < usable) {
			if (!kz && !(hz_calloc_release && !hz_os_dontneed(h->base, usable)))
				zero_recycled(h->base, usable);
			else if (kz)
				hz_fill_counted(h->base + kz, 0, usable - kz);
		}
		h->dirty = 1;
		h->cleared = 0;
		h->shared = 0;
		return h->base;
	}
	/* Retained addresses (budget.c), their pages not in memory: a fresh
	 * mapping's in all but the system calls and the first huge page's
	 * sample, advised anew where the decision changed since. */
	a = home;
	pthread_mutex_lock(&a->lock);
	h = hz_budget_take_retained(a, usable, mapped);
	pthread_mutex_unlock(&a->lock);
	int sampled = 0;
	if (h) {
		int now = hz_fresh_advice_now(h->advice);
		if (now != h->advice)
			hz_fresh_readvise(h->base, h->mapped, now);
		h->advice = now;
	} else {
		hz_fresh_probe_if_due(0); /* the new mapping is what it decides */
		if (!(h = hz_huge_map(mapped, usable, (unsigned)(a - hz_arenas)))) {
			/* Every arena's retained addresses given back, once:
			 * an address-space limit lowered since the start. */
			for (unsigned i = 0; i < HZ_ARENAS; i++) {
				pthread_mutex_lock(&hz_arenas[i].lock);
				hz_budget_unmap_retained(&hz_arenas[i]);
				pthread_mutex_unlock(&hz_arenas[i].lock);
			}
			if (!(h = hz_huge_map(mapped, usable, (unsigned)(a - hz_arenas))))
				return NULL;
		}
		sampled = 1;
	}
	out->refill = 1;
	out->fresh = usable;
	pthread_mutex_lock(&a->lock);
	hand_out(a, h, usable, zero, usable, 1);
	/* Huge blocks released lately stand for this one: asked for again. */
	size_t again = a->evicted < usable ? a->evicted : usable;
	a->evicted -= again;
	a->n.refaulted += again;
	a->n.refaults += h->advice == HZ_ADVISED_HUGE ? again / HZ_HUGE_SIZE : again >> HZ_PAGE_SHIFT;
	pthread_mutex_unlock(&a->lock);
	/* Watched for how much of it the program touches: past its first
	 * huge page where that was touched and timed as a sample (fresh.c). */
	size_t skip = sampled && h->advice == HZ_ADVISED_HUGE && hz_fresh_sampling() ? HZ_HUGE_SIZE : 0;
	if (usable > skip + HZ_HUGE_SIZE)
		hz_fresh_watch(h->base, h->base + skip, usable - skip, h->advice, out->populate);
	return h->base;
}

int hz_huge_cache_free(struct hz_huge *h, int cleared, int grown)
{
	struct hz_arena *a = hz_arena_of(h->owner);
	pthread_mutex_lock(&a->lock);
	if (!h->live) {
		pthread_mutex_unlock(&a->lock);
		return -1;
	}
	h->live = 0;
	if (cleared) /* and its mapping past it, never written since it was last cleared */
		h->dirty = 0;
	a->n.nfree++;
	h->freed = ++a->frees;
	a->allocated -= h->size;
	h->next = a->cache;
	a->cache = h;
	a->cached += h->mapped;
	if (grown)
		hz_budget_freed(a, h->size, NULL, 0, 0, h);
	hz_budget_bound(a);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

size_t hz_huge_cache_usable(struct hz_huge *h)
{
	struct hz_arena *a = hz_arena_of(h->owner);
	pthread_mutex_lock(&a->lock);
	size_t n = h->live ? h->size : 0;
	pthread_mutex_unlock(&a->lock);
	return n;
}

int hz_huge_cache_resize(struct hz_huge *h, size_t size)
{
	struct hz_arena *a = hz_arena_of(h->owner);
	size_t usable = hz_round_up(size, HZ_PAGE);
	pthread_mutex_lock(&a->lock);
	int ok = h->live && usable <= h->mapped &&
		 hz_round_up(size, HZ_HUGE_SIZE) == hz_round_up(h->mapped, HZ_HUGE_SIZE);
	if (ok) {
		if (usable > h->size)
			hz_arena_count_take(a, usable); /* a block of its new size taken */
		a->allocated = a->allocated - h->size + usable;
		h->size = usable;
	}
	pthread_mutex_unlock(&a->lock);
	return ok ? 0 : -1;
}

void *hz_huge_cache_move(struct hz_huge *h, size_t size)
{
	/* The same arena lock for the whole move: the block stays live. */
	struct hz_arena *a = hz_arena_of(h->owner);
	size_t usable = hz_round_up(size, HZ_PAGE);
	pthread_mutex_lock(&a->lock);
	void *moved = NULL;
	if (!hz_huge_remap(h, hz_round_up(size, HZ_HUGE_SIZE))) {
		if (usable > h->size)
			hz_arena_count_take(a, usable); /* a block of its new size taken */
		a->allocated = a->allocated - h->size + usable;
		h->size = usable;
		moved = h->base;
	}
	pthread_mutex_unlock(&a->lock);
	return moved;
}
