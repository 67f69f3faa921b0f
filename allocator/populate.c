/* Population of fresh blocks (populate.c): where the program is expected
 * to touch a new block, its pages are faulted in by one call per extent
 * (MADV_POPULATE_WRITE) instead of one fault per page; what "expected"
 * means is learned per size class from what the program touched of its
 * recent blocks; large blocks are populated over helper threads that run
 * only on idle cores (SCHED_IDLE). */
#define _GNU_SOURCE /* pthread_cond_clockwait (glibc 2.30) */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "../os/os.h"
#include "allocator.h"

static int mode = HZ_POPULATE_AUTO;
static unsigned threads = 1; /* the caller and threads - 1 helpers */

static void add(uint64_t *v, uint64_t k)
{
	__atomic_fetch_add(v, k, __ATOMIC_RELAXED);
}

static struct hz_populate_stats n;
static void helpers_raise(void);

/* ---- the classes: how much of recent blocks of a size the program touched ---- */

/* A quarter of a power of two: 1 MiB, 1.25 MiB, 1.5 MiB, ... */
#define CLASS_MIN_SHIFT 14
#define CLASSES (4 * (64 - CLASS_MIN_SHIFT))
struct class {
	uint16_t density; /* touched share, in 1/1024ths: the recent blocks' average */
	uint8_t samples;  /* blocks read, up to 255 */
	uint8_t handed;   /* blocks populated, for the one in EXPLORE left alone */
};
static struct class classes[CLASSES];

static unsigned class_of(size_t size)
{
	if (size < ((size_t)1 << CLASS_MIN_SHIFT))
		return 0;
	unsigned l = 63 - (unsigned)__builtin_clzll(size);
	return 4 * (l - CLASS_MIN_SHIFT) + (unsigned)((size >> (l - 2)) & 3);
}

/* Populated where the recent blocks of the class were mostly touched:
 * three quarters of their pages, in the page size they had (a huge page
 * touched at one byte costs its whole clear either way). */
#define DENSE 768
/* A populated block of fewer than SENTINEL_EVERY steps has no sentinel
 * step (see below); one in EXPLORE of them is left unpopulated and read
 * instead, so the class is learned again when the program changes. */
#define EXPLORE 8

/* The class learns a block's touched share: the average of its last few
 * (each new one weighs a quarter). Racy updates lose a sample, no more. */
static void learn(unsigned c, uint64_t share)
{
	struct class *k = &classes[c];
	uint64_t d = __atomic_load_n(&k->samples, __ATOMIC_RELAXED) ? (3 * (uint64_t)k->density + share) / 4 : share;
	__atomic_store_n(&k->density, (uint16_t)d, __ATOMIC_RELAXED);
	if (k->samples < 255)
		__atomic_store_n(&k->samples, (uint8_t)(k->samples + 1), __ATOMIC_RELAXED);
	add(&n.samples, 1);
}

/* ---- tracked blocks: populated, or read for their class ---- */

/* Steps of population and of the sentinels: one huge page. */
#define STEP HZ_HUGE_SIZE
/* In a block of at least SENTINEL_EVERY steps, step SENTINEL_EVERY / 2 of
 * every SENTINEL_EVERY is a sentinel: never populated, it is faulted in
 * by the program only where the program touches it, and the share of
 * sentinel pages in memory, read at the block's free, is the block's
 * touched share (and what of its population the program never used). A
 * sentinel faulted in costs what its population would have. */
#define SENTINEL_EVERY 16
/* A block is read at its free, or at a large allocation once it has been
 * handed out this long (a program may never free it). */
#define READ_NS ((uint64_t)10 * 1000000u)

enum kind { FREE_SLOT, READ_ALL, READ_SENTINELS, POPULATED };
struct track {
	unsigned char *p; /* the block, NULL for a free slot */
	size_t size, steps, populated;
	uint64_t at;
	unsigned cls;
	int kind;
	size_t skip_lo, skip_hi; /* steps fresh.c watches: left alone */
	size_t next;     /* the next step to claim */
	int inflight;    /* helpers stepping through it now */
	int cancelled;   /* freed: no step from now on */
	int busy;        /* a thread reads or ends it */
};
#define SLOTS 32
static struct track slots[SLOTS];
static int tracked; /* slots in use, for a free that finds none at once */

static int sentinel(const struct track *t, size_t step)
{
	return t->steps >= SENTINEL_EVERY && step % SENTINEL_EVERY == SENTINEL_EVERY / 2;
}

/* Whether step s is left to the program: a sentinel, or watched. */
static int left_alone(const struct track *t, size_t step)
{
	return sentinel(t, step) || (step >= t->skip_lo && step < t->skip_hi);
}

static struct track *slot_take(void *p, size_t size, unsigned cls, int kind)
{
	for (int i = 0; i < SLOTS; i++) {
		struct track *t = &slots[i];
		if (__atomic_load_n(&t->p, __ATOMIC_RELAXED) || __atomic_exchange_n(&t->busy, 1, __ATOMIC_ACQUIRE))
			continue;
		if (t->p) { /* taken meanwhile */
			__atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
			continue;
		}
		t->size = size;
		t->steps = hz_round_up(size, STEP) / STEP;
		t->populated = 0;
		t->at = hz_os_now_ns();
		t->cls = cls;
		t->kind = kind;
		t->skip_lo = t->skip_hi = 0;
		t->next = kind == READ_ALL ? t->steps : 0; /* nothing to populate */
		t->cancelled = 0;
		t->inflight = 0;
		__atomic_store_n(&t->p, (unsigned char *)p, __ATOMIC_RELEASE);
		__atomic_fetch_add(&tracked, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
		return t;
	}
	add(&n.untracked, 1);
	return NULL;
}

/* Ends t's population: no step from now on, the helpers' steps in flight
 * waited for (one step at most each; a helper starved on a busy machine is
 * raised to normal priority where that is permitted). */
static void cancel(struct track *t)
{
	__atomic_store_n(&t->cancelled, 1, __ATOMIC_SEQ_CST);
	for (unsigned spins = 0; __atomic_load_n(&t->inflight, __ATOMIC_SEQ_CST); spins++) {
		if (spins == 64)
			helpers_raise();
		hz_os_sleep_us(spins < 64 ? 0 : 50);
	}
}

/* The pages in memory of steps [lo, hi) of t (lo < t->steps): only the
 * sentinels with `sentinels` set. *pages gets how many were read. */
static size_t resident_in(const struct track *t, int sentinels, size_t *pages)
{
	size_t in = 0, k;
	*pages = 0;
	for (size_t s = 0; s < t->steps; s++) {
		if (sentinels && !sentinel(t, s))
			continue;
		size_t off = s * STEP, len = t->size - off < STEP ? t->size - off : STEP;
		if (hz_os_count_resident(t->p + off, len >> HZ_PAGE_SHIFT, &k))
			return (size_t)-1;
		in += k;
		*pages += len >> HZ_PAGE_SHIFT;
	}
	return in;
}

/* Reads t's touched share into its class and frees the slot (t->busy
 * held by the caller, who releases it). */
static void read_and_end(struct track *t)
{
	cancel(t);
	size_t pages, in;
	if (t->kind == READ_ALL || t->kind == READ_SENTINELS) {
		in = resident_in(t, t->kind == READ_SENTINELS, &pages);
		if (in != (size_t)-1 && pages) {
			uint64_t share = in * 1024 / pages;
			learn(t->cls, share);
			if (t->kind == READ_SENTINELS) {
				add(&n.program_faults, in);
				add(&n.untouched_bytes, t->populated / 1024 * (1024 - share));
			}
		}
	} else if (t->kind == POPULATED) {
		/* No sentinel: the class's figure stands for it. */
		uint64_t d = __atomic_load_n(&classes[t->cls].density, __ATOMIC_RELAXED);
		add(&n.untouched_bytes, t->populated / 1024 * (1024 - (d > 1024 ? 1024 : d)));
	}
	__atomic_store_n(&t->p, NULL, __ATOMIC_RELEASE);
	__atomic_fetch_sub(&tracked, 1, __ATOMIC_RELAXED);
}

/* Reads the blocks handed out READ_NS ago or more (one large allocation
 * of another thread may be doing so: those are skipped). */
static void read_due(void)
{
	uint64_t now = hz_os_now_ns();
	for (int i = 0; i < SLOTS && __atomic_load_n(&tracked, __ATOMIC_RELAXED); i++) {
		struct track *t = &slots[i];
		if (!__atomic_load_n(&t->p, __ATOMIC_ACQUIRE) || now - t->at < READ_NS ||
		    __atomic_exchange_n(&t->busy, 1, __ATOMIC_ACQUIRE))
			continue;
		if (t->p && now - t->at >= READ_NS && __atomic_load_n(&t->next, __ATOMIC_RELAXED) >= t->steps)
			read_and_end(t);
		__atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
	}
}

void hz_populate_freed(const void *p)
{
	if (hz_likely(!__atomic_load_n(&tracked, __ATOMIC_RELAXED)))
		return;
	for (int i = 0; i < SLOTS; i++) {
		struct track *t = &slots[i];
		if (__atomic_load_n(&t->p, __ATOMIC_ACQUIRE) != p)
			continue;
		/* Whoever reads it now (read_due) is done before we return. */
		while (__atomic_exchange_n(&t->busy, 1, __ATOMIC_ACQUIRE))
			hz_os_sleep_us(0);
		if (t->p == p)
			read_and_end(t);
		__atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
		return;
	}
}

/* ---- population: steps claimed from a shared counter ---- */

/* Populates t's steps claimed one at a time until none is left or t is
 * cancelled; returns the bytes. The caller holds t (a helper: inflight). */
static size_t populate_steps(struct track *t, int helper)
{
	size_t done = 0;
	for (;;) {
		if (__atomic_load_n(&t->cancelled, __ATOMIC_SEQ_CST))
			break;
		size_t s = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED);
		if (s >= t->steps)
			break;
		if (left_alone(t, s))
			continue;
		size_t off = s * STEP, end = off + STEP < t->size ? off + STEP : t->size;
		if (hz_os_populate(t->p + off, end - off))
			break; /* out of memory, or no such advice: the program faults */
		done += end - off;
		add(&n.bytes, end - off);
		if (helper)
			add(&n.helper_bytes, end - off);
	}
	__atomic_fetch_add(&t->populated, done, __ATOMIC_RELAXED);
	return done;
}

/* ---- the helpers: threads on idle cores that take steps of a block ---- */

#define HELPERS_MAX 16
/* A helper ends after this long with no block offered. */
#define LINGER_NS ((uint64_t)1000000000u)
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct track *job; /* the block offered, or NULL */
	uint64_t seq;      /* offers made: a helper takes each once */
	unsigned running;  /* helpers started and not ended */
	int tid[HELPERS_MAX];
	uint64_t gen;      /* bumped by fork_child: a helper of an older one ends */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, {0}, 0};

static void *helper_main(void *arg)
{
	uint64_t gen = (uint64_t)(uintptr_t)arg, seen = 0;
	int slot = -1;
	if (hz_os_sched_background() != HZ_SCHED_IDLE)
		add(&n.sched_fallbacks, 1);
	pthread_mutex_lock(&pool.lock);
	for (int i = 0; i < HELPERS_MAX && slot < 0; i++)
		if (!pool.tid[i])
			pool.tid[slot = i] = hz_os_thread_id();
	seen = pool.seq - (pool.job != NULL); /* the block it was started for */
	uint64_t idle_since = hz_os_now_ns();
	while (pool.gen == gen) {
		if (pool.job && pool.seq != seen) {
			struct track *t = pool.job;
			seen = pool.seq;
			/* Counted in flight under the lock: withdraw() takes the
			 * block away under it, and its free waits for this. */
			__atomic_fetch_add(&t->inflight, 1, __ATOMIC_SEQ_CST);
			pthread_mutex_unlock(&pool.lock);
			populate_steps(t, 1);
			__atomic_fetch_sub(&t->inflight, 1, __ATOMIC_SEQ_CST);
			pthread_mutex_lock(&pool.lock);
			idle_since = hz_os_now_ns();
			continue;
		}
		if (hz_os_now_ns() - idle_since >= LINGER_NS)
			break;
		uint64_t at = hz_os_now_ns() + LINGER_NS;
		struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
		pthread_cond_clockwait(&pool.wake, &pool.lock, CLOCK_MONOTONIC, &ts);
	}
	if (pool.gen == gen) {
		pool.running--;
		if (slot >= 0)
			pool.tid[slot] = 0;
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

/* Offers t to the helpers, starting the missing ones: 1 when it was
 * offered (withdraw it after), 0 when another block is on offer. */
static int offer(struct track *t)
{
	pthread_mutex_lock(&pool.lock);
	if (pool.job) {
		pthread_mutex_unlock(&pool.lock);
		return 0;
	}
	pool.job = t;
	pool.seq++;
	unsigned want = threads - 1 < HELPERS_MAX ? threads - 1 : HELPERS_MAX, start = 0;
	if (pool.running < want) {
		start = want - pool.running;
		pool.running = want;
	}
	uint64_t gen = pool.gen;
	pthread_cond_broadcast(&pool.wake);
	pthread_mutex_unlock(&pool.lock);
	for (unsigned i = 0; i < start; i++) {
		if (hz_os_thread_start(helper_main, (void *)(uintptr_t)gen)) {
			add(&n.helper_start_failures, 1);
			pthread_mutex_lock(&pool.lock);
			if (pool.gen == gen)
				pool.running--;
			pthread_mutex_unlock(&pool.lock);
		} else {
			add(&n.helper_starts, 1);
		}
	}
	return 1;
}

static void withdraw(struct track *t)
{
	pthread_mutex_lock(&pool.lock);
	if (pool.job == t)
		pool.job = NULL;
	pthread_mutex_unlock(&pool.lock);
}

/* The helpers raised to normal priority, where that is permitted: one is
 * in a step a free waits for. */
static void helpers_raise(void)
{
	pthread_mutex_lock(&pool.lock);
	for (int i = 0; i < HELPERS_MAX; i++)
		if (pool.tid[i])
			hz_os_sched_normal(pool.tid[i]);
	pthread_mutex_unlock(&pool.lock);
}

/* Whether a memory cgroup is near its limit: no population there (the
 * program may never touch what it would add). */
static int pressed(size_t size)
{
	size_t limit = __atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED);
	if (limit == HZ_LIMIT_NONE)
		return 0;
	size_t usage = hz_limits_usage();
	return usage == HZ_LIMIT_NONE || usage + size + limit / 8 > limit;
}

int hz_populate_wanted(size_t size)
{
	if (mode == HZ_POPULATE_OFF || size < STEP)
		return 0;
	if (__atomic_load_n(&tracked, __ATOMIC_RELAXED))
		read_due();
	struct class *k = &classes[class_of(size)];
	if (mode == HZ_POPULATE_AUTO && (!__atomic_load_n(&k->samples, __ATOMIC_RELAXED) ||
					 __atomic_load_n(&k->density, __ATOMIC_RELAXED) < DENSE))
		return 0;
	if (pressed(size)) {
		add(&n.pressed, 1);
		return 0;
	}
	return 1;
}

void hz_populate_block(void *p, size_t size, size_t fresh, int wanted)
{
	/* Mostly in memory already (recycled pages): nothing to learn or do. */
	if (mode == HZ_POPULATE_OFF || fresh < size / 2 || size < STEP)
		return;
	unsigned cls = class_of(size);
	size_t steps = hz_round_up(size, STEP) / STEP;
	if (!wanted) {
		slot_take(p, size, cls, READ_ALL); /* learnt at its free */
		return;
	}
	struct class *k = &classes[cls];
	uint8_t h = __atomic_fetch_add(&k->handed, 1, __ATOMIC_RELAXED);
	if (mode == HZ_POPULATE_AUTO && steps < SENTINEL_EVERY && h % EXPLORE == EXPLORE - 1) {
		add(&n.explored, 1);
		slot_take(p, size, cls, READ_ALL);
		return;
	}
	size_t lo, hi;
	int watched = hz_fresh_watched(p, &lo, &hi);
	if (watched && lo == 0 && hi >= size)
		return; /* all of it watched on small pages: left to the program */
	struct track *t = slot_take(p, size, cls, steps >= SENTINEL_EVERY ? READ_SENTINELS : POPULATED);
	add(&n.blocks, 1);
	if (!t) { /* no slot: populated by this thread, not learnt */
		if (watched) {
			if (lo && !hz_os_populate(p, lo))
				add(&n.bytes, lo);
			if (hi < size && !hz_os_populate((unsigned char *)p + hi, size - hi))
				add(&n.bytes, size - hi);
		} else if (!hz_os_populate(p, size)) {
			add(&n.bytes, size);
		}
		return;
	}
	if (watched) {
		t->skip_lo = lo / STEP;
		t->skip_hi = hz_round_up(hi, STEP) / STEP;
	}
	/* Large blocks: helpers on idle cores take steps beside this thread,
	 * which never waits for one (a helper that has not started takes
	 * none; one still in a step when this returns is waited for at the
	 * block's free). */
	int shared = size >= HZ_POPULATE_HELPERS_MIN && threads > 1 && offer(t);
	populate_steps(t, 0);
	if (shared)
		withdraw(t);
}

void hz_populate_setup(int m, unsigned nthreads)
{
	mode = m;
	threads = nthreads ? nthreads : hz_os_cpus();
}

void hz_populate_fork_prepare(void)
{
	pthread_mutex_lock(&pool.lock);
}

void hz_populate_fork_parent(void)
{
	pthread_mutex_unlock(&pool.lock);
}

void hz_populate_fork_child(void)
{
	/* No helper runs in the child: the parent's steps in flight are the
	 * parent's; the child's blocks are read again from scratch. */
	pool.gen++;
	pool.job = NULL;
	pool.running = 0;
	for (int i = 0; i < HELPERS_MAX; i++)
		pool.tid[i] = 0;
	for (int i = 0; i < SLOTS; i++) {
		slots[i].p = NULL;
		slots[i].busy = 0;
		slots[i].inflight = 0;
	}
	tracked = 0;
	pthread_mutex_unlock(&pool.lock);
	pthread_cond_init(&pool.wake, NULL);
}

void hz_populate_stats(struct hz_populate_stats *out)
{
	out->bytes = __atomic_load_n(&n.bytes, __ATOMIC_RELAXED);
	out->blocks = __atomic_load_n(&n.blocks, __ATOMIC_RELAXED);
	out->helper_bytes = __atomic_load_n(&n.helper_bytes, __ATOMIC_RELAXED);
	out->untouched_bytes = __atomic_load_n(&n.untouched_bytes, __ATOMIC_RELAXED);
	out->program_faults = __atomic_load_n(&n.program_faults, __ATOMIC_RELAXED);
	out->samples = __atomic_load_n(&n.samples, __ATOMIC_RELAXED);
	out->explored = __atomic_load_n(&n.explored, __ATOMIC_RELAXED);
	out->pressed = __atomic_load_n(&n.pressed, __ATOMIC_RELAXED);
	out->untracked = __atomic_load_n(&n.untracked, __ATOMIC_RELAXED);
	out->helper_starts = __atomic_load_n(&n.helper_starts, __ATOMIC_RELAXED);
	out->helper_start_failures = __atomic_load_n(&n.helper_start_failures, __ATOMIC_RELAXED);
	out->sched_fallbacks = __atomic_load_n(&n.sched_fallbacks, __ATOMIC_RELAXED);
	out->threads = threads;
	out->mode = mode;
}
