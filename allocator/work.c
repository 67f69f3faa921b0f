/* The zeroer's work (work.h). */
#include <errno.h>

#include "../arch/arch.h"
#include "../obs/counters.h"
#include "budget.h"
#include "fresh.h"
#include "work.h"

int hz_work_forked;
struct hz_work_counts hz_work_n;

#define STEP ((size_t)256 << 10)

static void add(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

/* Whether a kind of the zeroer's work pays in an arena (its lock held):
 * what it populated, or cleared, was handed out, not mostly released
 * unused (a program that frees and trims at once, whose faults a
 * population would only compete with, and whose trim makes a clear
 * wasted bandwidth). The record halves at each decay, and beyond 1 GiB. */
static int pays(struct hz_record *r)
{
	if (r->paid + r->wasted > ((size_t)1 << 30)) {
		r->paid /= 2;
		r->wasted /= 2;
	}
	return r->wasted <= 2 * r->paid + 2 * HZ_HUGE_SIZE;
}

/* The arena's most recently freed dirty memory, claimed for a clear (a's
 * lock held): 1, or 0 when it has none. */
static int claim_dirty(struct hz_arena *a)
{
	struct hz_chunk *best = NULL;
	size_t lo = 0, hi = 0, l, r;
	for (unsigned k = 0; k < a->nchunks; k++) {
		struct hz_chunk *c = a->chunks[k];
		if (c->dirty_free && (!best || c->freed > best->freed) && !hz_chunk_next_run(c, 1, 0, &l, &r)) {
			best = c;
			lo = l;
			hi = r;
		}
	}
	struct hz_huge *h = NULL;
	for (struct hz_huge *q = a->cache; q; q = q->next)
		if (q->dirty && !q->shared && (!h || q->freed > h->freed))
			h = q;
	if (h && (!best || h->freed > best->freed)) {
		size_t len = h->mapped - h->cleared < HZ_HUGE_SIZE ? h->mapped - h->cleared : HZ_HUGE_SIZE;
		hz_claim_set(a, NULL, 0, 0, h, h->cleared, len, 0);
		return 1;
	}
	if (best) {
		hz_claim_set(a, best, lo, hi, NULL, 0, 0, 0);
		return 1;
	}
	return 0;
}

/* Free pages not in memory of a (its lock held), claimed for population
 * while the reserve allows (all arenas' clean pages below hz_budget_reserve_max,
 * a's below what a handed out of pages not in memory since its last
 * decay: a program that recycles its blocks gets no reserve it would not
 * use; and none before a quarter of the reserve's size was) and a's dirty
 * budget does: 1; 0 when a has none (it may grow), -1 when it may not
 * take more. */
/* What a's reserve may take now (its lock held): 0 when it may not (see
 * claim_fresh). */
static size_t fresh_wanted(struct hz_arena *a, size_t reserve)
{
	size_t mine = hz_arena_clean_bytes(a), most = hz_budget_reserve_max;
	size_t want = a->missed < most ? a->missed : most;
	/* Not before a quarter of the reserve was taken fresh: a program whose
	 * large blocks mostly recycle (a few fresh pages now and then) keeps
	 * its footprint; half the budget at most: room left for what the
	 * program frees. */
	if (!pays(&a->populated) || a->missed < most / 4 || reserve >= most || mine >= want ||
	    hz_arena_free_bytes(a) + HZ_HUGE_SIZE > hz_budget_dirty_max / 2)
		return 0;
	return want - mine < most - reserve ? want - mine : most - reserve;
}

static int claim_fresh(struct hz_arena *a, size_t reserve)
{
	size_t left = fresh_wanted(a, reserve);
	if (!left)
		return -1;
	for (unsigned k = 0; k < a->nchunks; k++) {
		size_t lo, hi;
		struct hz_chunk *c = a->chunks[k];
		if (c->free_pages > c->dirty_free + c->clean_free && !hz_chunk_next_run(c, 0, 0, &lo, &hi)) {
			size_t pages = hz_round_up(left, HZ_PAGE) >> HZ_PAGE_SHIFT;
			hz_claim_set(a, c, lo, hi - lo > pages ? lo + pages : hi, NULL, 0, 0, 1);
			return 1;
		}
	}
	return 0;
}

/* Clears [p, p + n) with kernel k a step at a time while the piece is not
 * taken; returns the bytes cleared. Counted as every clear of the library
 * is (kernel.*, on the zeroer's own thread's block), beside
 * background.cleared_bytes. */
static size_t clear_steps(unsigned k, unsigned char *p, size_t n)
{
	size_t done = 0;
	while (done < n && !__atomic_load_n(&hz_claim.taken, __ATOMIC_RELAXED)) {
		size_t m = n - done < STEP ? n - done : STEP;
		__atomic_store_n(&hz_claim.step_at, hz_os_now_ns(), __ATOMIC_RELAXED);
		hz_fill(k, p + done, 0, m);
		hz_count_kernel(k, m);
		done += m;
	}
	return done;
}

/* Clears the claimed piece outside the lock; returns the bytes cleared.
 * After a fork, only the pages this process maps alone: a page still
 * shared copy-on-write would be copied by the clear, for nothing. */
static size_t clear_claimed(void)
{
	struct hz_claim *cl = &hz_claim;
	unsigned char *p = cl->c ? cl->c->base + (cl->lo << HZ_PAGE_SHIFT) : cl->h->base + cl->off;
	size_t len = cl->c ? (cl->hi - cl->lo) << HZ_PAGE_SHIFT : cl->len;
	/* The kernel calloc would take for all the dirty memory at hand:
	 * streaming stores for extents larger than the cache, whose lines
	 * would only evict the program's; temporal ones below, whose lines the
	 * program finds in the shared cache when it takes the block again. */
	unsigned k = hz_policy_pick(&hz_policy, 0, cl->extent);
	if (!__atomic_load_n(&hz_work_forked, __ATOMIC_RELAXED))
		return clear_steps(k, p, len);
	size_t n = len >> HZ_PAGE_SHIFT;
	/* Where the kernel cannot say (no /proc, no fd left, a filter), every
	 * page counts as shared: published as such, left to calloc. */
	cl->checked = 1;
	if (hz_os_pages_exclusive(p, n, cl->alone))
		return 0;
	size_t done = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && hz_claim_alone(j) == hz_claim_alone(i))
			j++;
		if (hz_claim_alone(i)) {
			size_t want = (j - i) << HZ_PAGE_SHIFT, got = clear_steps(k, p + (i << HZ_PAGE_SHIFT), want);
			done += got;
			if (got < want)
				break; /* taken */
		}
		i = j;
	}
	return done;
}

/* Does the claimed piece outside the lock: the bytes done; *failed when
 * the kernel has no MADV_POPULATE_WRITE (before Linux 5.14). */
static size_t do_claimed(int *failed)
{
	*failed = 0;
	if (!hz_claim.populate)
		return clear_claimed();
	size_t len = (hz_claim.hi - hz_claim.lo) << HZ_PAGE_SHIFT;
	/* A whole huge page of a chunk advised for them: a sample of what a
	 * fresh huge page costs (fresh.h). */
	int sample = len == HZ_HUGE_SIZE && __atomic_load_n(&hz_claim.c->advice, __ATOMIC_RELAXED) == HZ_ADVISED_HUGE && hz_fresh_sampling();
	uint64_t t0 = sample ? hz_os_now_ns() : 0;
	int e = hz_os_populate(hz_claim.c->base + (hz_claim.lo << HZ_PAGE_SHIFT), len);
	if (!e && sample)
		hz_fresh_sample(hz_os_now_ns() - t0);
	if (!e)
		return len;
	*failed = !__atomic_exchange_n(&hz_claim.taken, 1, __ATOMIC_RELAXED) && e == EINVAL;
	return 0;
}

/* Ends the claim in a (its lock held) and counts what it did. */
static void end_claimed(struct hz_arena *a, size_t done)
{
	int chunk = hz_claim.c != NULL, populate = hz_claim.populate;
	size_t len = hz_claim.len;
	switch (hz_claim_end(done)) {
	case HZ_CLAIM_ABANDONED:
		add(&hz_work_n.abandoned, done);
		break;
	case HZ_CLAIM_PUBLISHED:
		add(chunk && populate ? &hz_work_n.populated : &hz_work_n.cleared, chunk ? done : len);
		break;
	case HZ_CLAIM_SHARED:
		break;
	}
	pthread_cond_broadcast(&a->claim_done);
}

/* Whether the program's threads took page faults in the last QUIET_NS:
 * it is touching memory, and a population would compete with its faults
 * (on a VM, for the host's backing too): 1, or 0. Where the counts cannot
 * be read, it may always be: -1, from then on, and no population. Read on
 * the zeroer's thread. */
#define QUIET_NS ((uint64_t)1000000u)
static int program_faulting(void)
{
	static uint64_t others_seen, quiet_since;
	static int unknown;
	uint64_t process, self, now = hz_os_now_ns();
	if (unknown || hz_os_minor_faults(&process, &self))
		return unknown = -1;
	if (process - self != others_seen) {
		others_seen = process - self;
		quiet_since = now;
	}
	return now - quiet_since < QUIET_NS;
}

/* Whether some arena's reserve may take pages now: only then is the
 * program's faulting worth asking about. */
static int reserve_wanted(size_t reserve)
{
	int any = 0;
	for (int n = 0; n < HZ_ARENAS && !any; n++) {
		struct hz_arena *a = &hz_arenas[n];
		pthread_mutex_lock(&a->lock);
		any = fresh_wanted(a, reserve) != 0;
		pthread_mutex_unlock(&a->lock);
	}
	return any;
}

int hz_work_once(void)
{
	static unsigned next;
	for (int pass = 0; pass < 2; pass++) {
		/* The reserve as it is: free clean pages across the arenas. */
		size_t reserve = pass ? hz_arenas_clean_bytes() : 0;
		if (pass) {
			if (!reserve_wanted(reserve))
				return 0;
			int faulting = program_faulting();
			if (faulting)
				return faulting > 0 ? HZ_WORK_DEFERRED : 0;
		}
		for (int n = 0; n < HZ_ARENAS; n++) {
			struct hz_arena *a = &hz_arenas[(next + (unsigned)n) % HZ_ARENAS];
			pthread_mutex_lock(&a->lock);
			int got = pass ? claim_fresh(a, reserve) : !pays(&a->cleared) ? -1 : claim_dirty(a);
			if (got == 0 && pass && a->nchunks) {
				/* The reserve wants room: a new chunk, mapped outside the lock. */
				pthread_mutex_unlock(&a->lock);
				if (hz_arena_grow(a))
					continue;
				pthread_mutex_lock(&a->lock);
				got = claim_fresh(a, reserve);
			}
			pthread_mutex_unlock(&a->lock);
			if (got != 1)
				continue;
			int failed;
			size_t done = do_claimed(&failed);
			pthread_mutex_lock(&a->lock);
			end_claimed(a, done);
			pthread_mutex_unlock(&a->lock);
			if (failed) /* no MADV_POPULATE_WRITE: no reserve */
				hz_budget_no_reserve();
			next = (next + (unsigned)n + 1) % HZ_ARENAS;
			return 1;
		}
	}
	return 0;
}

int hz_work_decay(void)
{
	int holds = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		if (hz_arena_free_bytes(a))
			hz_budget_bound(a);
		holds |= hz_arena_free_bytes(a) != 0;
		pthread_mutex_unlock(&a->lock);
	}
	return holds;
}
