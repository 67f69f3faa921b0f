/* The background zeroer (background.h): its thread, its claim, and the
 * allocator's side of the protocol. */
#include <pthread.h>

#include "../arch/arch.h"
#include "background.h"
#include "huge.h"

int hz_zeroer_enabled;
size_t hz_zeroer_reserve;

/* The piece being worked on: set and ended under its arena's lock; taken
 * is also read by the zeroer between steps, without it. */
static struct {
	struct hz_arena *a;      /* NULL: no piece */
	struct hz_chunk *c;      /* pages [lo, hi) of c ... */
	size_t lo, hi;
	struct hz_huge *h;       /* ... or [off, off + len) of the cached block h */
	size_t off, len;
	int populate;            /* MADV_POPULATE_WRITE, which changes no byte */
	int taken;
} claim;

enum { NOT_STARTED, STARTING, RUNNING, FAILED };
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int state, pending, sleeping, allowed;
	uint64_t gen; /* bumped by fork_child: a thread of an older one stops */
} z = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NOT_STARTED, 0, 0, 0, 0};

static uint64_t starts, start_failures, sched_fallbacks, cleared, populated, abandoned, waits,
	cpu_ns, wakeups;
static int sched_got;

#define STEP ((size_t)256 << 10)
/* How long the zeroer sleeps with nothing to do while the arenas hold
 * free memory: it runs the decay (hz_arena_bound) on waking. */
#define IDLE_TICK_MS 250

static void add(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

/* ---- the allocator's side (its arena lock held) ---- */

static int overlaps(struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		    const struct hz_huge *h)
{
	if (claim.a != a)
		return 0;
	return c ? claim.c == c && lo < claim.hi && claim.lo < hi : claim.h == h;
}

void hz_zeroer_collide(struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		       const struct hz_huge *h)
{
	if (hz_likely(!overlaps(a, c, lo, hi, h)))
		return;
	__atomic_store_n(&claim.taken, 1, __ATOMIC_RELAXED);
	if (claim.populate)
		return; /* populating changes no byte: nothing to wait for */
	add(&waits, 1);
	/* Claims made meanwhile are of free pages and cached blocks: never
	 * of this block again. */
	while (overlaps(a, c, lo, hi, h))
		pthread_cond_wait(&a->zeroer_done, &a->lock);
}

void hz_zeroer_quiesce(struct hz_arena *a)
{
	while (claim.a == a) {
		__atomic_store_n(&claim.taken, 1, __ATOMIC_RELAXED);
		pthread_cond_wait(&a->zeroer_done, &a->lock);
	}
}

int hz_zeroer_claims(const struct hz_huge *h)
{
	return claim.a && claim.h == h;
}

/* ---- the zeroer's side ---- */

static void set_claim(struct hz_arena *a, struct hz_chunk *c, size_t lo, size_t hi, struct hz_huge *h,
		      size_t off, size_t len, int populate)
{
	claim.c = c;
	claim.lo = lo;
	claim.hi = hi;
	claim.h = h;
	claim.off = off;
	claim.len = len;
	claim.populate = populate;
	claim.taken = 0;
	if (c) {
		c->busy_lo = (uint32_t)lo;
		c->busy_hi = (uint32_t)hi;
	}
	claim.a = a;
}

/* Ends the claim (a's lock held), publishing it as clean unless taken. */
static void end_claim(struct hz_arena *a, size_t done)
{
	int taken = __atomic_load_n(&claim.taken, __ATOMIC_RELAXED);
	size_t bytes = claim.c ? (claim.hi - claim.lo) << HZ_PAGE_SHIFT : claim.len;
	if (taken) {
		add(&abandoned, done);
	} else if (claim.c) {
		hz_chunk_set_clean(claim.c, claim.lo, claim.hi);
		add(claim.populate ? &populated : &cleared, bytes);
	} else {
		struct hz_huge *h = claim.h;
		h->cleared = claim.off + claim.len;
		if (h->cleared >= h->mapped) {
			h->dirty = 0;
			h->cleared = 0;
		}
		add(&cleared, bytes);
	}
	if (claim.c)
		claim.c->busy_lo = claim.c->busy_hi = 0;
	claim.a = NULL;
	claim.c = NULL;
	claim.h = NULL;
	pthread_cond_broadcast(&a->zeroer_done);
}

/* The arena's most recently freed dirty memory, claimed for a clear (a's
 * lock held): 1, or 0 when it has none. */
static int claim_dirty(struct hz_arena *a)
{
	struct hz_chunk *best = NULL;
	for (unsigned k = 0; k < a->nchunks; k++) {
		struct hz_chunk *c = a->chunks[k];
		if (c->dirty_free && (!best || c->freed > best->freed))
			best = c;
	}
	struct hz_huge *h = NULL;
	for (struct hz_huge *q = a->cache; q; q = q->next)
		if (q->dirty && (!h || q->freed > h->freed))
			h = q;
	size_t lo, hi;
	if (h && (!best || h->freed > best->freed)) {
		size_t len = h->mapped - h->cleared < HZ_HUGE_SIZE ? h->mapped - h->cleared : HZ_HUGE_SIZE;
		set_claim(a, NULL, 0, 0, h, h->cleared, len, 0);
		return 1;
	}
	if (best && !hz_chunk_next_run(best, 1, 0, &lo, &hi)) {
		set_claim(a, best, lo, hi, NULL, 0, 0, 0);
		return 1;
	}
	return 0;
}

/* Clears the claimed piece outside the lock, a step at a time while it is
 * not taken; returns the bytes cleared. */
static size_t clear_claimed(void)
{
	unsigned char *p;
	size_t len, extent;
	if (claim.c) {
		p = claim.c->base + (claim.lo << HZ_PAGE_SHIFT);
		len = (claim.hi - claim.lo) << HZ_PAGE_SHIFT;
		extent = claim.c->dirty_free << HZ_PAGE_SHIFT;
	} else {
		p = claim.h->base + claim.off;
		len = claim.len;
		extent = claim.h->mapped;
	}
	/* The kernel calloc would take for all the dirty memory at hand:
	 * streaming stores for extents larger than the cache, whose lines
	 * would only evict the program's; temporal ones below, whose lines the
	 * program finds in the shared cache when it takes the block again. */
	unsigned k = hz_policy_pick(&hz_policy, 0, extent);
	size_t done = 0;
	while (done < len && !__atomic_load_n(&claim.taken, __ATOMIC_RELAXED)) {
		size_t n = len - done < STEP ? len - done : STEP;
		hz_fill(k, p + done, 0, n);
		done += n;
	}
	return done;
}

/* Free bytes of clean pages across the arenas: the reserve as it is. */
static size_t reserve_now(void)
{
	size_t pages = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		for (unsigned k = 0; k < a->nchunks; k++)
			pages += a->chunks[k]->clean_free;
		pthread_mutex_unlock(&a->lock);
	}
	return pages << HZ_PAGE_SHIFT;
}

/* Free pages not in memory of a (its lock held), claimed for population
 * while the reserve allows (all arenas' clean pages below
 * HUGEZERO_RESERVE, a's below what a handed out of pages not in memory
 * since its last decay: a program that recycles its blocks gets no
 * reserve it would not use) and a's dirty budget does: 1; 0 when a has
 * none (it may grow), -1 when it may not take more. */
static int claim_fresh(struct hz_arena *a, size_t reserve)
{
	size_t mine = 0;
	for (unsigned k = 0; k < a->nchunks; k++)
		mine += a->chunks[k]->clean_free << HZ_PAGE_SHIFT;
	size_t want = a->missed < hz_zeroer_reserve ? a->missed : hz_zeroer_reserve;
	if (reserve >= hz_zeroer_reserve || mine >= want || hz_arena_dirty(a) + HZ_HUGE_SIZE > hz_dirty_max)
		return -1;
	for (unsigned k = 0; k < a->nchunks; k++) {
		size_t lo, hi;
		struct hz_chunk *c = a->chunks[k];
		if (c->free_pages > c->dirty_free + c->clean_free && !hz_chunk_next_run(c, 0, 0, &lo, &hi)) {
			set_claim(a, c, lo, hi, NULL, 0, 0, 1);
			return 1;
		}
	}
	return 0;
}

/* One piece of work in some arena: 1 when there was one. Pre-clearing
 * first (it adds no memory), then the reserve. */
static int work_once(void)
{
	static unsigned next;
	for (int pass = 0; pass < 2; pass++) {
		size_t reserve = pass ? reserve_now() : 0;
		for (int n = 0; n < HZ_ARENAS; n++) {
			struct hz_arena *a = &hz_arenas[(next + (unsigned)n) % HZ_ARENAS];
			pthread_mutex_lock(&a->lock);
			int got = pass ? claim_fresh(a, reserve) : claim_dirty(a);
			if (got == 0 && pass && a->nchunks && a->nchunks < HZ_ARENA_CHUNKS) {
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
			size_t done;
			int failed = 0;
			if (claim.populate) {
				size_t len = (claim.hi - claim.lo) << HZ_PAGE_SHIFT;
				failed = hz_os_populate(claim.c->base + (claim.lo << HZ_PAGE_SHIFT), len);
				done = failed ? 0 : len;
				if (failed)
					__atomic_store_n(&claim.taken, 1, __ATOMIC_RELAXED);
			} else {
				done = clear_claimed();
			}
			pthread_mutex_lock(&a->lock);
			end_claim(a, done);
			pthread_mutex_unlock(&a->lock);
			if (failed) /* no MADV_POPULATE_WRITE (before Linux 5.14), or no memory: no reserve */
				__atomic_store_n(&hz_zeroer_reserve, 0, __ATOMIC_RELAXED);
			next = (next + (unsigned)n + 1) % HZ_ARENAS;
			return 1;
		}
	}
	return 0;
}

/* The decay, for memory no free would otherwise revisit: the reserve when
 * the program has stopped allocating. */
static int decay_all(void)
{
	int holds = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		if (hz_arena_dirty(a))
			hz_arena_bound(a);
		holds |= hz_arena_dirty(a) != 0;
		pthread_mutex_unlock(&a->lock);
	}
	return holds;
}

static void *zeroer_main(void *arg)
{
	uint64_t gen = (uint64_t)(uintptr_t)arg;
	enum hz_sched s = hz_os_sched_background();
	__atomic_store_n(&sched_got, (int)s, __ATOMIC_RELAXED);
	if (s != HZ_SCHED_IDLE)
		add(&sched_fallbacks, 1);
	for (;;) {
		int worked = work_once();
		__atomic_store_n(&cpu_ns, hz_os_thread_cpu_ns(), __ATOMIC_RELAXED);
		if (worked)
			continue;
		int holds = decay_all();
		pthread_mutex_lock(&z.lock);
		if (z.gen != gen) { /* a forked child's copy: never runs */
			pthread_mutex_unlock(&z.lock);
			return NULL;
		}
		if (!z.pending) {
			z.sleeping = 1;
			if (holds) {
				struct timespec t;
				uint64_t at = hz_os_realtime_ns() + (uint64_t)IDLE_TICK_MS * 1000000u;
				t.tv_sec = (time_t)(at / 1000000000u);
				t.tv_nsec = (long)(at % 1000000000u);
				pthread_cond_timedwait(&z.wake, &z.lock, &t);
			} else {
				pthread_cond_wait(&z.wake, &z.lock);
			}
			z.sleeping = 0;
			add(&wakeups, 1);
		}
		z.pending = 0;
		pthread_mutex_unlock(&z.lock);
	}
	return NULL;
}

static HZ_NOINLINE void start(void)
{
	pthread_mutex_lock(&z.lock);
	int go = z.state == NOT_STARTED && z.allowed;
	if (go)
		z.state = STARTING;
	uint64_t gen = z.gen;
	pthread_mutex_unlock(&z.lock);
	if (!go)
		return;
	int e = hz_os_thread_start(zeroer_main, (void *)(uintptr_t)gen);
	pthread_mutex_lock(&z.lock);
	if (z.gen == gen)
		z.state = e ? FAILED : RUNNING;
	pthread_mutex_unlock(&z.lock);
	add(e ? &start_failures : &starts, 1);
}

void hz_zeroer_kick(int may_start)
{
	if (!hz_zeroer_enabled)
		return;
	int state = __atomic_load_n(&z.state, __ATOMIC_RELAXED);
	if (hz_unlikely(state != RUNNING)) {
		if (state != NOT_STARTED || !may_start)
			return;
		start();
	}
	if (__atomic_load_n(&z.pending, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&z.lock);
	z.pending = 1;
	if (z.sleeping)
		pthread_cond_signal(&z.wake);
	pthread_mutex_unlock(&z.lock);
}

void hz_zeroer_allow(int allowed)
{
	pthread_mutex_lock(&z.lock);
	z.allowed = allowed;
	pthread_mutex_unlock(&z.lock);
}

void hz_zeroer_stats(struct hz_zeroer_stats *out)
{
	out->running = __atomic_load_n(&z.state, __ATOMIC_RELAXED) == RUNNING;
	out->sched = out->running ? __atomic_load_n(&sched_got, __ATOMIC_RELAXED) : 0;
	out->starts = __atomic_load_n(&starts, __ATOMIC_RELAXED);
	out->start_failures = __atomic_load_n(&start_failures, __ATOMIC_RELAXED);
	out->sched_fallbacks = __atomic_load_n(&sched_fallbacks, __ATOMIC_RELAXED);
	out->cleared = __atomic_load_n(&cleared, __ATOMIC_RELAXED);
	out->populated = __atomic_load_n(&populated, __ATOMIC_RELAXED);
	out->abandoned = __atomic_load_n(&abandoned, __ATOMIC_RELAXED);
	out->waits = __atomic_load_n(&waits, __ATOMIC_RELAXED);
	out->cpu_ns = __atomic_load_n(&cpu_ns, __ATOMIC_RELAXED);
	out->wakeups = __atomic_load_n(&wakeups, __ATOMIC_RELAXED);
}

void hz_zeroer_fork_prepare(void)
{
	pthread_mutex_lock(&z.lock);
}

void hz_zeroer_fork_parent(void)
{
	pthread_mutex_unlock(&z.lock);
}

void hz_zeroer_fork_child(void)
{
	/* The piece in flight stays dirty (it was never published); the
	 * child's zeroer starts when the child needs one. */
	if (claim.c)
		claim.c->busy_lo = claim.c->busy_hi = 0;
	claim.a = NULL;
	claim.c = NULL;
	claim.h = NULL;
	z.state = NOT_STARTED;
	z.pending = z.sleeping = 0;
	z.gen++;
	starts = start_failures = sched_fallbacks = cleared = populated = abandoned = waits = 0;
	cpu_ns = wakeups = 0;
	pthread_mutex_unlock(&z.lock);
	pthread_cond_init(&z.wake, NULL);
}
