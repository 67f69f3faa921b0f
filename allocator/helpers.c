/* Helper threads on idle cores (helpers.c): one large extent's work, a
 * population or a fill, cut into 2 MiB steps claimed from a shared
 * counter by the calling thread and by helpers at SCHED_IDLE. Offered
 * only while a core is idle; a helper that wakes late, or is preempted in
 * a step, takes no more. The caller never waits for a helper that has not
 * started, only for steps in flight. */
#define _GNU_SOURCE /* pthread_cond_clockwait (glibc 2.30) */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "../obs/obs.h"
#include "../os/os.h"
#include "allocator.h"

static unsigned threads = 1; /* the caller and threads - 1 helpers */
static unsigned cpus = 1;    /* the CPU set's size */
static int stopping;         /* exit has begun: helpers take no step */
static struct hz_helpers_stats n;

static void add(uint64_t *v, uint64_t k)
{
	__atomic_fetch_add(v, k, __ATOMIC_RELAXED);
}

/* ---- a job's steps ---- */

/* A helper whose step took this much longer than its CPU time was
 * preempted (a step is 0.1-0.3 ms of work; a SCHED_IDLE thread that a
 * busy core preempts waits for whole time slices). */
#define PREEMPTED_NS ((uint64_t)1000000u)

void hz_job_init(struct hz_job *j, int kind, void *p, size_t size)
{
	j->kind = kind;
	j->p = p;
	j->size = size;
	j->first = (uintptr_t)p & ~(uintptr_t)(HZ_JOB_STEP - 1);
	j->steps = hz_job_span(p, size);
	j->skip_every = j->skip_at = j->skip_lo = j->skip_hi = 0;
	j->c = 0;
	j->kernel = 0;
	j->next = 0;
	j->in_step = 0;
	j->cancelled = 0;
	j->early = j->failed = 0;
	j->done = j->helper_done = 0;
	/* holders stays: only a job no helper holds is initialised. */
}

void hz_job_step_range(const struct hz_job *j, size_t s, unsigned char **lo, unsigned char **hi)
{
	uintptr_t a = j->first + s * HZ_JOB_STEP, b = a + HZ_JOB_STEP, p = (uintptr_t)j->p, e = p + j->size;
	*lo = (unsigned char *)(a > p ? a : p);
	*hi = (unsigned char *)(b < e ? b : e);
}

int hz_job_left_alone(const struct hz_job *j, size_t s)
{
	return (j->skip_every && s % j->skip_every == j->skip_at) || (s >= j->skip_lo && s < j->skip_hi);
}

size_t hz_job_steps(struct hz_job *j, int helper, size_t early)
{
	size_t done = 0;
	for (;;) {
		if (__atomic_load_n(&j->cancelled, __ATOMIC_SEQ_CST) ||
		    (helper && __atomic_load_n(&stopping, __ATOMIC_RELAXED)))
			break;
		/* Early: the rest left to a helper that holds the job now. */
		if (early && __atomic_load_n(&j->next, __ATOMIC_RELAXED) >= early &&
		    __atomic_load_n(&j->holders, __ATOMIC_SEQ_CST)) {
			j->early = 1;
			break;
		}
		/* In a step before the claim: whoever waits for the steps in
		 * flight sees every claimed one (a claim past the end, or on a
		 * cancelled job, leaves at once). */
		__atomic_fetch_add(&j->in_step, 1, __ATOMIC_SEQ_CST);
		size_t s = __atomic_fetch_add(&j->next, 1, __ATOMIC_SEQ_CST);
		if (s >= j->steps || __atomic_load_n(&j->cancelled, __ATOMIC_SEQ_CST)) {
			__atomic_fetch_sub(&j->in_step, 1, __ATOMIC_SEQ_CST);
			break;
		}
		if (hz_job_left_alone(j, s)) {
			__atomic_fetch_sub(&j->in_step, 1, __ATOMIC_SEQ_CST);
			continue;
		}
		unsigned char *lo, *hi;
		hz_job_step_range(j, s, &lo, &hi);
		uint64_t t0 = helper ? hz_os_now_ns() : 0, c0 = helper ? hz_os_thread_cpu_ns() : 0;
		int e = 0;
		if (j->kind == HZ_JOB_FILL)
			hz_fill(j->kernel, lo, j->c, (size_t)(hi - lo));
		else
			e = hz_os_populate(lo, (size_t)(hi - lo));
		/* Counted before the step ends: whoever waits for the steps in
		 * flight reads the counts whole. */
		if (!e) {
			done += (size_t)(hi - lo);
			__atomic_fetch_add(&j->done, (size_t)(hi - lo), __ATOMIC_RELAXED);
			if (helper) {
				__atomic_fetch_add(&j->helper_done, (size_t)(hi - lo), __ATOMIC_RELAXED);
				add(j->kind == HZ_JOB_FILL ? &n.filled : &n.populated, (size_t)(hi - lo));
			}
		}
		__atomic_fetch_sub(&j->in_step, 1, __ATOMIC_SEQ_CST);
		if (e) { /* out of memory, or no such advice: the program faults */
			__atomic_store_n(&j->failed, e, __ATOMIC_RELAXED);
			break;
		}
		/* A helper preempted in its step (its core is no longer idle)
		 * takes no more: a starved SCHED_IDLE thread in the kernel's
		 * population holds the process's memory map lock, and a fill's
		 * steps are waited for. */
		if (helper && hz_os_now_ns() - t0 > hz_os_thread_cpu_ns() - c0 + PREEMPTED_NS) {
			add(&n.preempted, 1);
			break;
		}
	}
	return done;
}

/* ---- the helpers ---- */

#define HELPERS_MAX 16
/* A helper ends after this long with no job offered (a fill never starts
 * one: a program that clears one large block again and again keeps them
 * while it does). */
#define LINGER_NS ((uint64_t)10 * 1000000000u)
/* A forked child starts helpers only once it has lived this long (a child
 * that maps a block and exits has no use for them). */
#define CHILD_WAIT_NS ((uint64_t)1000000000u)
/* A helper that wakes this long after the offer found no idle core: it
 * takes no step of that job. */
#define LATE_NS ((uint64_t)1000000u)
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* a job offered, or the end */
	struct hz_job *job;  /* the job on offer, or NULL */
	uint64_t offered_at; /* hz_os_now_ns of its offer */
	uint64_t seq;        /* offers made: a helper takes each once */
	unsigned running;    /* helpers started and not ended */
	int tid[HELPERS_MAX];
	int raised[HELPERS_MAX]; /* raised to normal priority for a wait */
	int allowed;         /* from the constructor's end */
	int no_proc;         /* /proc/loadavg could not be read: no idle core known */
	uint64_t child_at;   /* in a forked child: when it was forked */
	uint64_t gen;        /* bumped by fork_child: a helper of an older one ends */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, {0}, {0}, 0, 0, 0, 0};

/* The job on offer leaves the offer (pool lock held). */
static void unoffer(struct hz_job *j)
{
	if (pool.job == j)
		pool.job = NULL;
}

/* A helper raised for a wait goes back to SCHED_IDLE (pool lock held). */
static void lower(int slot)
{
	if (slot >= 0 && pool.raised[slot]) {
		pool.raised[slot] = 0;
		hz_os_sched_background();
	}
}

static void *helper_main(void *arg)
{
	uint64_t gen = (uint64_t)(uintptr_t)arg, seen;
	int slot = -1;
	if (hz_os_sched_background() != HZ_SCHED_IDLE)
		add(&n.sched_fallbacks, 1);
	pthread_mutex_lock(&pool.lock);
	for (int i = 0; i < HELPERS_MAX && slot < 0; i++)
		if (!pool.tid[i])
			pool.tid[slot = i] = hz_os_thread_id();
	seen = pool.seq - (pool.job != NULL); /* the job it was started for */
	uint64_t idle_since = hz_os_now_ns();
	while (pool.gen == gen && !stopping) {
		lower(slot);
		if (pool.job && pool.seq != seen && hz_os_now_ns() - pool.offered_at > LATE_NS) {
			seen = pool.seq;
			add(&n.late, 1);
			continue;
		}
		if (pool.job && pool.seq != seen) {
			struct hz_job *j = pool.job;
			seen = pool.seq;
			/* Held under the lock the job leaves the offer under: a
			 * job a helper holds is never initialised again. */
			__atomic_fetch_add(&j->holders, 1, __ATOMIC_SEQ_CST);
			pthread_mutex_unlock(&pool.lock);
			hz_job_steps(j, 1, 0);
			pthread_mutex_lock(&pool.lock);
			unoffer(j); /* no step left, ended, or this helper gave up */
			__atomic_fetch_sub(&j->holders, 1, __ATOMIC_SEQ_CST);
			idle_since = hz_os_now_ns();
			continue;
		}
		uint64_t now = hz_os_now_ns();
		if (now - idle_since >= LINGER_NS)
			break;
		uint64_t at = idle_since + LINGER_NS;
		struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
		pthread_cond_clockwait(&pool.wake, &pool.lock, CLOCK_MONOTONIC, &ts);
	}
	if (pool.gen == gen) {
		pool.running--;
		if (slot >= 0)
			pool.tid[slot] = pool.raised[slot] = 0;
		pthread_cond_broadcast(&pool.wake);
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

/* Whether a core is idle now: fewer threads run or wait to run in the
 * whole system than the CPU set has CPUs (the caller is one of them).
 * Where that cannot be read, none is, from then on (pool lock held). */
static int idle_core(void)
{
	unsigned r;
	if (pool.no_proc)
		return 0;
	int e = hz_os_runnable(&r);
	if (e && e != EMFILE && e != ENFILE && e != EINTR)
		pool.no_proc = 1;
	if (e || r >= cpus) {
		add(&n.busy, 1);
		return 0;
	}
	return 1;
}

/* Starts `start` helpers of generation gen, counted in pool.running
 * already (no lock held: pthread_create allocates). */
static void start_helpers(unsigned start, uint64_t gen)
{
	for (unsigned i = 0; i < start; i++) {
		if (hz_os_thread_start(helper_main, (void *)(uintptr_t)gen)) {
			add(&n.start_failures, 1);
			pthread_mutex_lock(&pool.lock);
			if (pool.gen == gen)
				pool.running--;
			pthread_mutex_unlock(&pool.lock);
		} else {
			add(&n.starts, 1);
		}
	}
}

/* Offers j to the helpers (never waiting for the pool's lock), starting
 * the missing ones when may_start is set: 1, or 0 when another job is on
 * offer, no core is idle or no helper may run (before the constructor's
 * end, after exit began, in a child's first second). */
static int offer(struct hz_job *j, int may_start)
{
	if (threads < 2 || pthread_mutex_trylock(&pool.lock))
		return 0;
	if (pool.job || !pool.allowed || stopping ||
	    (pool.child_at && hz_os_now_ns() - pool.child_at < CHILD_WAIT_NS) ||
	    (!may_start && !pool.running) || !idle_core()) {
		pthread_mutex_unlock(&pool.lock);
		return 0;
	}
	pool.job = j;
	pool.offered_at = hz_os_now_ns();
	pool.seq++;
	unsigned want = threads - 1 < HELPERS_MAX ? threads - 1 : HELPERS_MAX, start = 0;
	if (may_start && pool.running < want) {
		start = want - pool.running;
		pool.running = want;
	}
	uint64_t gen = pool.gen;
	pthread_cond_broadcast(&pool.wake);
	pthread_mutex_unlock(&pool.lock);
	start_helpers(start, gen);
	return 1;
}

int hz_helpers_offer(struct hz_job *j)
{
	return offer(j, 1);
}

void hz_helpers_start(void)
{
	unsigned want = threads - 1 < HELPERS_MAX ? threads - 1 : HELPERS_MAX, start = 0;
	if (threads < 2 || __atomic_load_n(&pool.running, __ATOMIC_RELAXED) >= want ||
	    pthread_mutex_trylock(&pool.lock))
		return;
	if (pool.allowed && !stopping && !(pool.child_at && hz_os_now_ns() - pool.child_at < CHILD_WAIT_NS) &&
	    pool.running < want) {
		start = want - pool.running;
		pool.running = want;
	}
	uint64_t gen = pool.gen;
	pthread_mutex_unlock(&pool.lock);
	start_helpers(start, gen);
}

void hz_helpers_withdraw(struct hz_job *j)
{
	pthread_mutex_lock(&pool.lock);
	unoffer(j);
	pthread_mutex_unlock(&pool.lock);
}

/* The helpers raised to normal priority, where that is permitted (root,
 * or an RLIMIT_NICE of 20): one is in a step that a thread waits for.
 * Each goes back to SCHED_IDLE once it is idle again. 1 when any was. */
static int raise_all(void)
{
	int any = 0;
	pthread_mutex_lock(&pool.lock);
	for (int i = 0; i < HELPERS_MAX; i++)
		if (pool.tid[i] && !pool.raised[i] && !hz_os_sched_normal(pool.tid[i]))
			any = pool.raised[i] = 1;
	pthread_mutex_unlock(&pool.lock);
	return any;
}

void hz_job_wait(struct hz_job *j)
{
	for (unsigned spins = 0; __atomic_load_n(&j->in_step, __ATOMIC_SEQ_CST); spins++) {
		if (spins == 64) {
			raise_all();
			add(&n.raised_waits, 1);
		}
		if (spins < 64)
			hz_os_yield();
		else
			hz_os_sleep_us(20);
	}
}

void hz_job_cancel(struct hz_job *j)
{
	__atomic_store_n(&j->cancelled, 1, __ATOMIC_SEQ_CST);
	hz_job_wait(j);
}

/* ---- a fill split over the helpers ---- */

/* The one fill job: not on a caller's stack, which a caller that leaves
 * memset otherwise (a signal handler's longjmp) would hand back while a
 * helper still holds the job. */
static struct hz_job fill_job;
static int fill_busy;

int hz_helpers_fill(void *p, int c, size_t size, unsigned kernel, int may_start)
{
	struct hz_job *j = &fill_job;
	if (threads < 2 || size < HZ_HELPERS_MIN || __atomic_exchange_n(&fill_busy, 1, __ATOMIC_ACQUIRE))
		return 0;
	if (__atomic_load_n(&j->holders, __ATOMIC_SEQ_CST)) { /* a starved helper of the last fill */
		__atomic_store_n(&fill_busy, 0, __ATOMIC_RELEASE);
		return 0;
	}
	hz_job_init(j, HZ_JOB_FILL, p, size);
	j->c = c;
	j->kernel = kernel;
	if (!offer(j, may_start)) {
		__atomic_store_n(&fill_busy, 0, __ATOMIC_RELEASE);
		return 0;
	}
	int cancel = hz_os_cancel_off(); /* the wait below is never left half way */
	hz_job_steps(j, 0, 0);
	hz_helpers_withdraw(j);
	/* Every byte is written before this returns: a helper's step in
	 * flight is waited for (it started on an idle core). */
	hz_job_wait(j);
	hz_os_cancel_restore(cancel);
	__atomic_store_n(&fill_busy, 0, __ATOMIC_RELEASE);
	add(&n.fills, 1);
	return 1;
}

/* ---- life ---- */

void hz_helpers_setup(unsigned nthreads)
{
	cpus = hz_os_cpus();
	threads = nthreads ? nthreads : cpus;
}

void hz_helpers_allow(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.allowed = 1;
	pthread_mutex_unlock(&pool.lock);
}

void hz_helpers_exit(void)
{
	pthread_mutex_lock(&pool.lock);
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&pool.wake);
	pthread_mutex_unlock(&pool.lock);
	/* The helpers end (one in a step ends it first) before the process
	 * tears its memory down: raised, as the zeroer is, so that a starved
	 * one does not hold the teardown for seconds; waited for, boundedly
	 * (briefly when they could not be raised: exit never waits for a
	 * starved one). */
	uint64_t end = hz_os_now_ns() + (raise_all() ? 200 : 20) * 1000000u;
	pthread_mutex_lock(&pool.lock);
	while (pool.running && hz_os_now_ns() < end) {
		struct timespec ts = {(time_t)(end / 1000000000u), (long)(end % 1000000000u)};
		pthread_cond_clockwait(&pool.wake, &pool.lock, CLOCK_MONOTONIC, &ts);
	}
	pthread_mutex_unlock(&pool.lock);
}

void hz_helpers_fork_prepare(void)
{
	pthread_mutex_lock(&pool.lock);
}

void hz_helpers_fork_parent(void)
{
	pthread_mutex_unlock(&pool.lock);
}

void hz_helpers_fork_child(void)
{
	/* No helper runs in the child, none holds a job; its counters start
	 * from zero. */
	pool.gen++;
	pool.job = NULL;
	pool.running = 0;
	pool.child_at = hz_os_now_ns();
	for (int i = 0; i < HELPERS_MAX; i++)
		pool.tid[i] = pool.raised[i] = 0;
	fill_job.holders = 0;
	fill_busy = 0;
	n = (struct hz_helpers_stats){0};
	pthread_mutex_unlock(&pool.lock);
	pthread_cond_init(&pool.wake, NULL);
}

void hz_helpers_stats(struct hz_helpers_stats *out)
{
	out->populated = __atomic_load_n(&n.populated, __ATOMIC_RELAXED);
	out->filled = __atomic_load_n(&n.filled, __ATOMIC_RELAXED);
	out->fills = __atomic_load_n(&n.fills, __ATOMIC_RELAXED);
	out->starts = __atomic_load_n(&n.starts, __ATOMIC_RELAXED);
	out->start_failures = __atomic_load_n(&n.start_failures, __ATOMIC_RELAXED);
	out->sched_fallbacks = __atomic_load_n(&n.sched_fallbacks, __ATOMIC_RELAXED);
	out->raised_waits = __atomic_load_n(&n.raised_waits, __ATOMIC_RELAXED);
	out->busy = __atomic_load_n(&n.busy, __ATOMIC_RELAXED);
	out->late = __atomic_load_n(&n.late, __ATOMIC_RELAXED);
	out->preempted = __atomic_load_n(&n.preempted, __ATOMIC_RELAXED);
	out->threads = threads;
	out->helpers = threads - 1 < HELPERS_MAX ? threads - 1 : HELPERS_MAX;
}
