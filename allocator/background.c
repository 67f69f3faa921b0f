/* The background zeroer (background.h): its thread, its claim, and the
 * allocator's side of the protocol. */
#define _GNU_SOURCE /* pthread_cond_clockwait (glibc 2.30) */
#include <errno.h>
#include <pthread.h>
#include <time.h>

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
	size_t extent;           /* the dirty memory at hand when claimed: the kernel's size */
	int populate;            /* MADV_POPULATE_WRITE, which changes no byte */
	int taken;
	int checked;             /* after a fork: excl says which pages are this process's alone */
	uint64_t excl[8];
} claim;

/* Set at the first fork, in parent and child: pages may be shared
 * copy-on-write from then on, and a clear of one would copy it. */
static int forked;
HZ_TLS int hz_zeroer_want;

enum { NOT_STARTED, STARTING, RUNNING, FAILED };
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the thread's sleep, and its end */
	int state, pending, sleeping, allowed, stop;
	uint64_t gen;      /* bumped by fork_child: a thread of an older one stops */
	uint64_t child_at; /* in a forked child: when it was forked */
} z = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NOT_STARTED, 0, 0, 0, 0, 0, 0};

static uint64_t starts, start_failures, sched_fallbacks, cleared, populated, abandoned, waits,
	cpu_ns, cpu_ns_base, wakeups, exits;
static int sched_got;

#define STEP ((size_t)256 << 10)
/* How long the zeroer sleeps with nothing to do while the arenas hold
 * free memory: it runs the decay (hz_arena_bound) on waking. */
#define IDLE_TICK_MS 250
/* The thread ends after this long with nothing to do. */
#define LINGER_NS ((uint64_t)1000000000u)
/* A forked child starts one only once it has lived this long: a child
 * that frees and exits at once has no use for it. */
#define CHILD_WAIT_NS ((uint64_t)1000000000u)

static void add(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

/* ---- the allocator's side (its arena lock held) ---- */

/* claim.a is read under another arena's lock than the one it is written
 * under: atomically. The rest only once it names the reader's arena. */
static struct hz_arena *claim_arena(void)
{
	return __atomic_load_n(&claim.a, __ATOMIC_RELAXED);
}

static int overlaps(struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		    const struct hz_huge *h)
{
	if (claim_arena() != a)
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
	while (claim_arena() == a) {
		__atomic_store_n(&claim.taken, 1, __ATOMIC_RELAXED);
		pthread_cond_wait(&a->zeroer_done, &a->lock);
	}
}

int hz_zeroer_claims(const struct hz_huge *h)
{
	return claim_arena() == &hz_arenas[h->owner] && claim.h == h;
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
	claim.checked = 0;
	claim.extent = c ? c->dirty_free << HZ_PAGE_SHIFT : h->mapped;
	if (c) {
		c->busy_lo = (uint32_t)lo;
		c->busy_hi = (uint32_t)hi;
	}
	__atomic_store_n(&claim.a, a, __ATOMIC_RELAXED);
}

static int excl(size_t i)
{
	return !claim.checked || (claim.excl[i / 64] >> (i % 64) & 1);
}

/* Publishes the chunk pages of the claim: cleared ones clean, the ones
 * shared with a forked process marked so (a's lock held). */
static void publish_pages(void)
{
	for (size_t i = claim.lo; i < claim.hi;) {
		int e = excl(i - claim.lo);
		size_t j = i + 1;
		while (j < claim.hi && excl(j - claim.lo) == e)
			j++;
		if (e)
			hz_chunk_set_clean(claim.c, i, j);
		else
			hz_chunk_set_shared(claim.c, i, j);
		i = j;
	}
}

/* Ends the claim (a's lock held), publishing it as clean unless taken. */
static void end_claim(struct hz_arena *a, size_t done)
{
	int taken = __atomic_load_n(&claim.taken, __ATOMIC_RELAXED);
	size_t bytes = claim.c ? (claim.hi - claim.lo) << HZ_PAGE_SHIFT : claim.len;
	if (taken) {
		add(&abandoned, done);
	} else if (claim.c) {
		publish_pages();
		add(claim.populate ? &populated : &cleared, done);
	} else if (done < claim.len) { /* shared with a forked process */
		claim.h->shared = 1;
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
	__atomic_store_n(&claim.a, NULL, __ATOMIC_RELAXED);
	claim.c = NULL;
	claim.h = NULL;
	pthread_cond_broadcast(&a->zeroer_done);
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
		set_claim(a, NULL, 0, 0, h, h->cleared, len, 0);
		return 1;
	}
	if (best) {
		set_claim(a, best, lo, hi, NULL, 0, 0, 0);
		return 1;
	}
	return 0;
}

/* Clears [p, p + n) with kernel k a step at a time while the piece is not
 * taken; returns the bytes cleared. */
static size_t clear_steps(unsigned k, unsigned char *p, size_t n)
{
	size_t done = 0;
	while (done < n && !__atomic_load_n(&claim.taken, __ATOMIC_RELAXED)) {
		size_t m = n - done < STEP ? n - done : STEP;
		hz_fill(k, p + done, 0, m);
		done += m;
	}
	return done;
}

/* Clears the claimed piece outside the lock; returns the bytes cleared.
 * After a fork, only the pages this process maps alone: a page still
 * shared copy-on-write would be copied by the clear, for nothing. */
static size_t clear_claimed(void)
{
	unsigned char *p = claim.c ? claim.c->base + (claim.lo << HZ_PAGE_SHIFT) : claim.h->base + claim.off;
	size_t len = claim.c ? (claim.hi - claim.lo) << HZ_PAGE_SHIFT : claim.len;
	/* The kernel calloc would take for all the dirty memory at hand:
	 * streaming stores for extents larger than the cache, whose lines
	 * would only evict the program's; temporal ones below, whose lines the
	 * program finds in the shared cache when it takes the block again. */
	unsigned k = hz_policy_pick(&hz_policy, 0, claim.extent);
	if (!__atomic_load_n(&forked, __ATOMIC_RELAXED))
		return clear_steps(k, p, len);
	size_t n = len >> HZ_PAGE_SHIFT;
	/* Where the kernel cannot say (no /proc, no fd left, a filter), every
	 * page counts as shared: published as such, left to calloc. */
	claim.checked = 1;
	if (hz_os_pages_exclusive(p, n, claim.excl))
		return 0;
	size_t done = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && excl(j) == excl(i))
			j++;
		if (excl(i)) {
			size_t want = (j - i) << HZ_PAGE_SHIFT, got = clear_steps(k, p + (i << HZ_PAGE_SHIFT), want);
			done += got;
			if (got < want)
				break; /* taken */
		}
		i = j;
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
 * reserve it would not use; and none before a quarter of the reserve's
 * size was) and a's dirty budget does: 1; 0 when a has
 * none (it may grow), -1 when it may not take more. */
static int claim_fresh(struct hz_arena *a, size_t reserve)
{
	size_t mine = 0;
	for (unsigned k = 0; k < a->nchunks; k++)
		mine += a->chunks[k]->clean_free << HZ_PAGE_SHIFT;
	size_t want = a->missed < hz_zeroer_reserve ? a->missed : hz_zeroer_reserve;
	/* Not before a quarter of the reserve was taken fresh: a program whose
	 * large blocks mostly recycle (a few fresh pages now and then) keeps
	 * its footprint. */
	if (a->missed < hz_zeroer_reserve / 4 || reserve >= hz_zeroer_reserve || mine >= want || hz_arena_dirty(a) + HZ_HUGE_SIZE > hz_dirty_max / 2)
		return -1; /* half the budget at most: room left for what the program frees */
	size_t left = want - mine < hz_zeroer_reserve - reserve ? want - mine : hz_zeroer_reserve - reserve;
	for (unsigned k = 0; k < a->nchunks; k++) {
		size_t lo, hi;
		struct hz_chunk *c = a->chunks[k];
		if (c->free_pages > c->dirty_free + c->clean_free && !hz_chunk_next_run(c, 0, 0, &lo, &hi)) {
			size_t most = hz_round_up(left, HZ_PAGE) >> HZ_PAGE_SHIFT;
			set_claim(a, c, lo, hi - lo > most ? lo + most : hi, NULL, 0, 0, 1);
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
			size_t done;
			int failed = 0;
			if (claim.populate) {
				size_t len = (claim.hi - claim.lo) << HZ_PAGE_SHIFT;
				failed = hz_os_populate(claim.c->base + (claim.lo << HZ_PAGE_SHIFT), len);
				done = failed ? 0 : len;
				if (failed)
					failed = !__atomic_exchange_n(&claim.taken, 1, __ATOMIC_RELAXED) &&
						 failed == EINVAL;
			} else {
				done = clear_claimed();
			}
			pthread_mutex_lock(&a->lock);
			end_claim(a, done);
			pthread_mutex_unlock(&a->lock);
			if (failed) /* no MADV_POPULATE_WRITE (before Linux 5.14): no reserve */
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

/* ns from now on CLOCK_MONOTONIC (hz_os_now_ns's clock), for a timed
 * wait that no change of the wall clock lengthens. */
static struct timespec after(uint64_t ns)
{
	uint64_t at = hz_os_now_ns() + ns;
	return (struct timespec){(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
}

static void *zeroer_main(void *arg)
{
	uint64_t gen = (uint64_t)(uintptr_t)arg;
	pthread_mutex_lock(&z.lock);
	if (z.gen == gen)
		z.state = RUNNING;
	pthread_mutex_unlock(&z.lock);
	enum hz_sched s = hz_os_sched_background();
	__atomic_store_n(&sched_got, (int)s, __ATOMIC_RELAXED);
	if (s != HZ_SCHED_IDLE)
		add(&sched_fallbacks, 1);
	__atomic_store_n(&cpu_ns_base, hz_os_thread_cpu_ns(), __ATOMIC_RELAXED); /* this thread's clock */
	uint64_t idle_since = hz_os_now_ns();
	for (;;) {
		int worked = !__atomic_load_n(&z.stop, __ATOMIC_RELAXED) && work_once();
		add(&cpu_ns, hz_os_thread_cpu_ns() - __atomic_load_n(&cpu_ns_base, __ATOMIC_RELAXED));
		__atomic_store_n(&cpu_ns_base, hz_os_thread_cpu_ns(), __ATOMIC_RELAXED);
		if (worked) {
			idle_since = hz_os_now_ns();
			continue;
		}
		int holds = decay_all();
		if (holds)
			idle_since = hz_os_now_ns(); /* the linger counts from when the decay is done */
		pthread_mutex_lock(&z.lock);
		/* A forked child's copy never runs; and with nothing to do for
		 * LINGER and no free memory left for the decay to release, or at
		 * exit, the thread ends: a process that exits later has no
		 * SCHED_IDLE thread left to tear its memory down (the last thread
		 * out does), slowly on a busy machine. The next large free starts
		 * another. */
		if (z.gen != gen || z.stop || (!z.pending && !holds && hz_os_now_ns() - idle_since >= LINGER_NS)) {
			if (z.gen == gen) {
				z.state = NOT_STARTED;
				add(&exits, 1);
			}
			pthread_cond_broadcast(&z.wake);
			pthread_mutex_unlock(&z.lock);
			return NULL;
		}
		if (!z.pending) {
			struct timespec t = after(holds ? (uint64_t)IDLE_TICK_MS * 1000000u : LINGER_NS);
			z.sleeping = 1;
			pthread_cond_clockwait(&z.wake, &z.lock, CLOCK_MONOTONIC, &t);
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
	int go = z.state == NOT_STARTED && z.allowed && !z.stop &&
		 (!z.child_at || hz_os_now_ns() - z.child_at >= CHILD_WAIT_NS);
	if (go) {
		z.state = STARTING;
		z.pending = 0;
	}
	uint64_t gen = z.gen;
	pthread_mutex_unlock(&z.lock);
	if (!go)
		return;
	int e = hz_os_thread_start(zeroer_main, (void *)(uintptr_t)gen);
	if (e) {
		pthread_mutex_lock(&z.lock);
		if (z.gen == gen)
			z.state = FAILED;
		pthread_mutex_unlock(&z.lock);
	}
	add(e ? &start_failures : &starts, 1);
}

void hz_zeroer_kick(int may_start, int wake)
{
	if (!hz_zeroer_enabled)
		return;
	int state = __atomic_load_n(&z.state, __ATOMIC_RELAXED);
	if (hz_likely(state == RUNNING)) {
		if (!wake || __atomic_load_n(&z.pending, __ATOMIC_RELAXED))
			return;
		pthread_mutex_lock(&z.lock);
		if (z.state == RUNNING) {
			z.pending = 1;
			if (z.sleeping)
				pthread_cond_signal(&z.wake);
			pthread_mutex_unlock(&z.lock);
			return;
		}
		pthread_mutex_unlock(&z.lock);
		state = NOT_STARTED; /* it ended meanwhile */
	}
	/* The first start at a large free or calloc; once started, any large
	 * call that has work for it starts it again. */
	if (state == NOT_STARTED && (may_start || (wake && __atomic_load_n(&starts, __ATOMIC_RELAXED))))
		start();
}

void hz_zeroer_exit(void)
{
	pthread_mutex_lock(&z.lock);
	z.allowed = 0;
	z.stop = 1;
	pthread_cond_signal(&z.wake);
	/* A bounded wait: long enough for a thread that gets the CPU to end
	 * its step; exit never waits for a starved one. */
	struct timespec t = after(20 * 1000000u);
	while (z.state == RUNNING || z.state == STARTING)
		if (pthread_cond_clockwait(&z.wake, &z.lock, CLOCK_MONOTONIC, &t))
			break;
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
	out->exits = __atomic_load_n(&exits, __ATOMIC_RELAXED);
}

void hz_zeroer_fork_prepare(void)
{
	pthread_mutex_lock(&z.lock);
	__atomic_store_n(&forked, 1, __ATOMIC_RELAXED);
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
	__atomic_store_n(&claim.a, NULL, __ATOMIC_RELAXED);
	claim.c = NULL;
	claim.h = NULL;
	z.state = NOT_STARTED;
	z.pending = z.sleeping = 0;
	z.gen++;
	z.child_at = hz_os_now_ns();
	starts = start_failures = sched_fallbacks = cleared = populated = abandoned = waits = 0;
	cpu_ns = cpu_ns_base = wakeups = exits = 0;
	pthread_mutex_unlock(&z.lock);
	pthread_cond_init(&z.wake, NULL);
}
