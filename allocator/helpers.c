/* Helper threads on idle cores (helpers.c): one large extent's work, a
 * population or a fill, cut into 2 MiB steps claimed from a shared
 * counter by the calling thread and by helpers at SCHED_IDLE. Offered
 * only while a core is idle; a helper that wakes late, or is preempted in
 * a step, takes no more. The caller never waits for a helper that has not
 * started a step, only for steps in flight.
 *
 * What a program can see of it: nothing. memset's side makes no system
 * call and takes no lock (an offer is one compare-and-swap, read by
 * helpers that poll while work is likely); work belongs to its block or
 * to its memset's frame and ends with it (hz_job_end, hz_helpers_jumped);
 * the library's threads end before a call that needs the process
 * single-threaded (hz_helpers_quiesce). docs/design.md, "Invisible to
 * the program". */
#define _GNU_SOURCE /* pthread_cond_clockwait (glibc 2.30) */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "../obs/obs.h"
#include "../os/os.h"
#include "allocator.h"

static unsigned threads = 1; /* the caller and threads - 1 helpers */
static unsigned cpus = 1;    /* the CPU set's size */
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
/* next: the job's generation above this bit, the next step below. */
#define GEN_SHIFT 40
#define STEP_MASK (((uint64_t)1 << GEN_SHIFT) - 1)
#define GEN_MASK (((uint32_t)1 << (64 - GEN_SHIFT)) - 1)
/* Set while the helpers must end (exit, a quiesce): they take no step. */
static int helpers_ending;

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
	j->early = 0;
	uint32_t gen = (__atomic_load_n(&j->gen, __ATOMIC_RELAXED) + 1) & GEN_MASK;
	__atomic_store_n(&j->gen, gen, __ATOMIC_RELAXED);
	__atomic_store_n(&j->failed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&j->done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&j->helper_done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&j->closed, 0, __ATOMIC_RELAXED);
	/* Nothing to claim until hz_job_open: the owner sets its other fields
	 * first. in_step and holders stay: a stale helper's claim fails, and
	 * it counts itself out. */
	__atomic_store_n(&j->next, ((uint64_t)gen << GEN_SHIFT) | j->steps, __ATOMIC_RELEASE);
}

void hz_job_open(struct hz_job *j)
{
	/* Last: a claim of this generation sees every field written before. */
	__atomic_store_n(&j->next, (uint64_t)__atomic_load_n(&j->gen, __ATOMIC_RELAXED) << GEN_SHIFT, __ATOMIC_RELEASE);
}

size_t hz_job_claimed(const struct hz_job *j)
{
	return (size_t)(__atomic_load_n(&j->next, __ATOMIC_ACQUIRE) & STEP_MASK);
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

/* The next step of generation gen into *s: 1, or 0 when none is left or
 * the job is of another generation now (ended, or taken again). */
static int claim(struct hz_job *j, uint32_t gen, size_t *s)
{
	uint64_t cur = __atomic_load_n(&j->next, __ATOMIC_ACQUIRE);
	for (;;) {
		if (cur >> GEN_SHIFT != gen || (cur & STEP_MASK) >= j->steps)
			return 0;
		if (__atomic_compare_exchange_n(&j->next, &cur, cur + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			*s = (size_t)(cur & STEP_MASK);
			return 1;
		}
	}
}

/* Whether the calling thread waited for a CPU more than PREEMPTED_NS
 * since t0 (its clock then c0). */
static int was_preempted(uint64_t t0, uint64_t c0)
{
	return hz_os_now_ns() - t0 > hz_os_thread_cpu_ns() - c0 + PREEMPTED_NS;
}

/* A helper populates a step in pieces of this size: while it is inside
 * one it holds the process's memory-map lock (the program's mmap, munmap
 * and fork wait for it), so a helper preempted there holds it no longer
 * than one piece (on 4 KiB pages; a huge page is faulted whole). */
#define POPULATE_PIECE ((size_t)256 << 10)

/* A helper's population of [p, p + len) piece by piece, from t0 (its
 * clock c0): the bytes populated; it stops early, *preempted set, after a
 * piece in which it was preempted (the rest left to the program's
 * faults), once j is ended (its wait may have passed its bound), and at
 * the first error (*e). */
static size_t populate_pieces(struct hz_job *j, unsigned char *p, size_t len, uint64_t t0, uint64_t c0, int *e,
			      int *preempted)
{
	size_t done = 0;
	while (done < len && (!done || !__atomic_load_n(&j->closed, __ATOMIC_SEQ_CST))) {
		size_t k = len - done < POPULATE_PIECE ? len - done : POPULATE_PIECE;
		if ((*e = hz_os_populate(p + done, k)))
			return done;
		done += k;
		if (done < len && was_preempted(t0, c0)) {
			*preempted = 1;
			break;
		}
	}
	return done;
}

size_t hz_job_steps(struct hz_job *j, uint32_t gen, int helper, size_t early)
{
	size_t done = 0;
	for (;;) {
		if (helper && (__atomic_load_n(&j->closed, __ATOMIC_SEQ_CST) ||
			       __atomic_load_n(&helpers_ending, __ATOMIC_RELAXED)))
			break;
		/* Early: the rest left to a helper that holds the job now. */
		if (early && hz_job_claimed(j) >= early && __atomic_load_n(&j->holders, __ATOMIC_SEQ_CST)) {
			j->early = 1;
			break;
		}
		size_t s;
		if (!claim(j, gen, &s))
			break;
		/* A helper counts itself in its step after its claim, then finds
		 * the job of the same generation still: whoever ends it (a new
		 * generation, then a wait for the steps in flight) sees this
		 * step, or this helper sees the end and leaves the step undone.
		 * A helper preempted before it counted itself holds up no one. */
		if (helper) {
			__atomic_fetch_add(&j->in_step, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&j->next, __ATOMIC_SEQ_CST) >> GEN_SHIFT != gen ||
			    __atomic_load_n(&j->closed, __ATOMIC_SEQ_CST)) {
				__atomic_fetch_sub(&j->in_step, 1, __ATOMIC_SEQ_CST);
				break;
			}
		}
		if (hz_job_left_alone(j, s)) {
			if (helper)
				__atomic_fetch_sub(&j->in_step, 1, __ATOMIC_SEQ_CST);
			continue;
		}
		unsigned char *lo, *hi;
		hz_job_step_range(j, s, &lo, &hi);
		uint64_t t0 = helper ? hz_os_now_ns() : 0, c0 = helper ? hz_os_thread_cpu_ns() : 0;
		int e = 0, preempted = 0;
		size_t len = (size_t)(hi - lo);
		if (j->kind == HZ_JOB_FILL)
			hz_fill(j->kernel, lo, j->c, len);
		else if (!helper)
			e = hz_os_populate(lo, len);
		else
			len = populate_pieces(j, lo, len, t0, c0, &e, &preempted);
		/* Counted before the step ends: whoever waits for the steps in
		 * flight reads the counts whole. */
		if (!e) {
			done += len;
			__atomic_fetch_add(&j->done, len, __ATOMIC_RELAXED);
			if (helper) {
				__atomic_fetch_add(&j->helper_done, len, __ATOMIC_RELAXED);
				add(j->kind == HZ_JOB_FILL ? &n.filled : &n.populated, len);
			}
		}
		if (helper)
			__atomic_fetch_sub(&j->in_step, 1, __ATOMIC_SEQ_CST);
		if (e) { /* out of memory, or no such advice: the program faults */
			__atomic_store_n(&j->failed, e, __ATOMIC_RELAXED);
			break;
		}
		/* A helper preempted in its step (its core is no longer idle)
		 * takes no more: a starved SCHED_IDLE thread in the kernel's
		 * population holds the process's memory map lock, and a fill's
		 * steps are waited for. */
		if (helper && (preempted || was_preempted(t0, c0))) {
			add(&n.preempted, 1);
			break;
		}
	}
	return done;
}

/* ---- the helpers ---- */

#define HELPERS_MAX 16
/* A helper ends after this long with no job offered. */
#define LINGER_NS ((uint64_t)10 * 1000000000u)
/* After a job or an allocation of HZ_HELPERS_MIN (whose memsets may
 * follow), helpers poll for an offer for HOT_NS: every POLL_US for the
 * first POLL_FAST_NS, every POLL_SLOW_US after (a program that clears one
 * block again and again keeps them polling), reading the idle cores every
 * IDLE_EVERY_NS. memset offers work only to a polling helper, since
 * waking a sleeping one is a system call. */
#define HOT_NS ((uint64_t)1000000000u)
#define POLL_FAST_NS ((uint64_t)20 * 1000000u)
#define POLL_US 100
#define POLL_SLOW_US 1000
#define IDLE_EVERY_NS ((uint64_t)1000000u)
/* A helper that finds an offer this long after it was made takes no step
 * of it (its core was not idle meanwhile): twice the slow poll. */
#define LATE_NS ((uint64_t)2000000u)

/* The helpers: a crew (crew.c) for their lives; the offer and what it
 * needs are lock-free. */
static struct hz_crew crew = HZ_CREW_INIT;
static struct {
	int no_proc;         /* /proc/loadavg could not be read: no idle core known */
	struct hz_job *job;  /* the job on offer, or NULL */
	uint64_t seq;        /* offers made: a helper takes each once */
	uint64_t offered_at; /* hz_os_now_ns of the last offer */
	uint64_t hot_until;  /* helpers poll until then */
	int polling;         /* helpers polling now */
	unsigned idle;       /* idle cores the helpers may take, as last read */
} pool;

/* Helpers that may take work: the CPU set's, or a CPU quota's, less the caller. */
static unsigned wanted(void)
{
	unsigned t = threads, q = hz_limits.cpu_quota;
	if (q && q < t)
		t = q;
	t = t ? t - 1 : 0;
	return t < HELPERS_MAX ? t : HELPERS_MAX;
}

/* Reads the idle cores into pool.idle: the CPUs of the set (or quota) not
 * running or waiting to run a thread of the whole system; `self` counts
 * the reading thread among them (a helper's read, the caller of a later
 * memset running too). Where it cannot be read, none is, from then on.
 * System calls: never on memset's path. */
static void read_idle(int self)
{
	unsigned r, limit = hz_limits.cpu_quota && hz_limits.cpu_quota < cpus ? hz_limits.cpu_quota : cpus;
	if (__atomic_load_n(&pool.no_proc, __ATOMIC_RELAXED))
		return;
	int e = hz_os_runnable(&r);
	if (e && e != EMFILE && e != ENFILE && e != EINTR)
		__atomic_store_n(&pool.no_proc, 1, __ATOMIC_RELAXED);
	/* The caller of the offer is among the runnable; a helper reading is
	 * one more, which the offer's caller replaces. */
	if (self && r)
		r--;
	unsigned idle = e || r + 1 > limit ? 0 : limit - r;
	__atomic_store_n(&pool.idle, e ? 0 : idle, __ATOMIC_RELAXED);
}

/* The job on offer taken off it, if it is still j. */
static void unoffer(struct hz_job *j)
{
	__atomic_compare_exchange_n(&pool.job, &j, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* Takes the offer not seen yet (*seen: the last offer seen) and runs its
 * steps: 1 when it did, 0 when there was none to take. */
static int take_offer(uint64_t *seen)
{
	uint64_t s = __atomic_load_n(&pool.seq, __ATOMIC_SEQ_CST);
	struct hz_job *j = __atomic_load_n(&pool.job, __ATOMIC_SEQ_CST);
	if (!j || s == *seen)
		return 0;
	*seen = s;
	if (hz_os_now_ns() - __atomic_load_n(&pool.offered_at, __ATOMIC_RELAXED) > LATE_NS) {
		add(&n.late, 1);
		return 0;
	}
	/* Held, its generation read, then checked still on offer: a job is
	 * taken again only once it is off the offer and no helper holds it,
	 * so the generation read here is the offer's. */
	__atomic_fetch_add(&j->holders, 1, __ATOMIC_SEQ_CST);
	uint32_t gen = (uint32_t)(__atomic_load_n(&j->next, __ATOMIC_SEQ_CST) >> GEN_SHIFT);
	if (__atomic_load_n(&pool.job, __ATOMIC_SEQ_CST) == j && __atomic_load_n(&pool.seq, __ATOMIC_SEQ_CST) == s) {
		hz_job_steps(j, gen, 1, 0);
		if (__atomic_load_n(&pool.seq, __ATOMIC_SEQ_CST) == s)
			unoffer(j); /* no step left, ended, or this helper gave up */
	}
	__atomic_fetch_sub(&j->holders, 1, __ATOMIC_SEQ_CST);
	return 1;
}

static void *helper_main(void *arg)
{
	uint64_t gen = (uint64_t)(uintptr_t)arg, seen, last_read = 0;
	int slot = hz_crew_enter(&crew, gen), polls = 0;
	seen = __atomic_load_n(&pool.seq, __ATOMIC_SEQ_CST) - (__atomic_load_n(&pool.job, __ATOMIC_SEQ_CST) != NULL);
	uint64_t idle_since = hz_os_now_ns();
	while (slot >= 0 && !hz_crew_must_end(&crew, gen)) {
		/* Raised for a wait that is over: back to SCHED_IDLE, holding no lock. */
		if (!__atomic_load_n(&pool.job, __ATOMIC_RELAXED))
			hz_crew_lower(&crew, slot);
		if (take_offer(&seen)) {
			idle_since = hz_os_now_ns();
			uint64_t hot = idle_since + HOT_NS;
			if (hot > __atomic_load_n(&pool.hot_until, __ATOMIC_RELAXED))
				__atomic_store_n(&pool.hot_until, hot, __ATOMIC_RELAXED);
			continue;
		}
		uint64_t now = hz_os_now_ns();
		if (now < __atomic_load_n(&pool.hot_until, __ATOMIC_RELAXED)) {
			if (!polls) {
				polls = 1;
				__atomic_fetch_add(&pool.polling, 1, __ATOMIC_SEQ_CST);
			}
			if (now - last_read >= IDLE_EVERY_NS) {
				read_idle(1);
				last_read = now;
			}
			uint64_t since = now + HOT_NS - __atomic_load_n(&pool.hot_until, __ATOMIC_RELAXED);
			hz_os_sleep_us(since < POLL_FAST_NS ? POLL_US : POLL_SLOW_US);
			continue;
		}
		if (polls) {
			polls = 0;
			if (__atomic_sub_fetch(&pool.polling, 1, __ATOMIC_SEQ_CST) == 0)
				__atomic_store_n(&pool.idle, 0, __ATOMIC_RELAXED); /* no one reads it now */
		}
		if (now - idle_since >= LINGER_NS)
			break;
		struct timespec ts;
		hz_crew_timespec(idle_since + LINGER_NS, &ts);
		pthread_mutex_lock(&crew.lock);
		if (!hz_crew_must_end(&crew, gen) && hz_os_now_ns() >= __atomic_load_n(&pool.hot_until, __ATOMIC_RELAXED))
			pthread_cond_clockwait(&crew.wake, &crew.lock, CLOCK_MONOTONIC, &ts);
		pthread_mutex_unlock(&crew.lock);
	}
	if (polls && __atomic_sub_fetch(&pool.polling, 1, __ATOMIC_SEQ_CST) == 0)
		__atomic_store_n(&pool.idle, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&crew.lock);
	hz_crew_leave_locked(&crew, slot, gen);
	pthread_mutex_unlock(&crew.lock);
	return NULL;
}

/* Whether helpers may run now (lock-free reads). */
static int may_run(void)
{
	return threads >= 2 && hz_crew_may_start(&crew);
}

/* Whether helpers poll for offers now, or are starting to (a new one
 * takes the offer it finds at its start): memset offers only then. */
static int hot(void)
{
	return hz_os_now_ns() < __atomic_load_n(&pool.hot_until, __ATOMIC_RELAXED);
}

/* Starts k helpers of generation gen, their slots reserved. */
static HZ_NOINLINE void start_helpers(unsigned k, uint64_t gen)
{
	for (unsigned i = 0; i < k; i++)
		hz_crew_started(&crew, gen, hz_os_thread_start(helper_main, (void *)(uintptr_t)gen));
}

/* Starts the missing helpers and wakes the sleeping ones to poll for
 * HOT_NS, the idle cores read unless the caller just did: an
 * allocation's path, no lock of the library held (pthread_create
 * allocates). */
static void warm(int idle_read)
{
	uint64_t gen;
	if (!idle_read)
		read_idle(0);
	__atomic_store_n(&pool.hot_until, hz_os_now_ns() + HOT_NS, __ATOMIC_RELAXED);
	if (pthread_mutex_trylock(&crew.lock))
		return; /* a helper holds it (and runs): never waited for */
	unsigned start = hz_crew_reserve(&crew, wanted(), &gen);
	pthread_cond_broadcast(&crew.wake);
	pthread_mutex_unlock(&crew.lock);
	if (start && hz_crew_filtered(&crew))
		for (unsigned i = 0; i < start; i++)
			hz_crew_started(&crew, gen, EPERM);
	else
		start_helpers(start, gen);
}

/* Offers j of generation gen: 1, or 0 when another job is on offer, no
 * core is idle or no helper may run. From an allocation (may_start):
 * the idle cores read now, the helpers started or woken. From memset:
 * no system call, no lock: only to helpers polling already, with the
 * idle cores they read. */
static int offer(struct hz_job *j, int may_start)
{
	if (!may_run() || (!may_start && !hot()))
		return 0;
	if (may_start)
		read_idle(0);
	if (!__atomic_load_n(&pool.idle, __ATOMIC_RELAXED)) {
		add(&n.busy, 1);
		return 0;
	}
	struct hz_job *none = NULL;
	__atomic_store_n(&pool.offered_at, hz_os_now_ns(), __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&pool.job, &none, j, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return 0;
	__atomic_fetch_add(&pool.seq, 1, __ATOMIC_SEQ_CST);
	if (may_start)
		warm(1);
	return 1;
}

int hz_helpers_offer(struct hz_job *j)
{
	return offer(j, 1);
}

void hz_helpers_start(void)
{
	if (may_run())
		warm(0);
}

void hz_helpers_withdraw(struct hz_job *j)
{
	unoffer(j);
}

/* Spins this long for a step in flight before any system call: a step is
 * 25-300 us of work, and memset's wait on a running helper makes none. */
#define SPIN_NS ((uint64_t)2000000u)
/* Raised helpers are waited for this long at most where the wait may end
 * (bound set): a population's step changes no byte. */
#define BOUND_NS ((uint64_t)100000000u)

/* Waits until no helper is in a step of j: spinning, then sleeping with
 * the helpers raised to this thread's scheduling; with bound, at most
 * BOUND_NS: 1 when no step is in flight, 0 when the bound passed. */
static int wait_steps(struct hz_job *j, int bound)
{
	uint64_t t0 = hz_os_now_ns();
	int raised = 0;
	while (__atomic_load_n(&j->in_step, __ATOMIC_SEQ_CST)) {
		uint64_t t = hz_os_now_ns() - t0;
		if (t < SPIN_NS)
			continue;
		if (!raised && (raised = hz_crew_raise(&crew) >= 0))
			add(&n.raised_waits, 1);
		if (bound && t >= BOUND_NS) {
			add(&n.bounded_waits, 1);
			return 0;
		}
		hz_os_sleep_us(20);
	}
	return 1;
}

int hz_job_end(struct hz_job *j, int bound)
{
	__atomic_store_n(&j->closed, 1, __ATOMIC_SEQ_CST);
	unoffer(j);
	/* A generation no claim is of: no step is taken from now on. */
	uint64_t cur = __atomic_load_n(&j->next, __ATOMIC_ACQUIRE);
	uint32_t gen = (uint32_t)((cur >> GEN_SHIFT) + 1) & GEN_MASK;
	__atomic_store_n(&j->gen, gen, __ATOMIC_RELAXED);
	__atomic_store_n(&j->next, (uint64_t)gen << GEN_SHIFT, __ATOMIC_SEQ_CST);
	return wait_steps(j, bound);
}

/* ---- a fill split over the helpers ---- */

/* The fills in flight, one a memset: not on a caller's stack, which a
 * caller that leaves memset otherwise (a signal handler's longjmp) would
 * hand back while a helper still holds the job. A slot is the calling
 * thread's (mine) from its take to its end; a memset nested in it (a
 * signal handler's) is deeper on the same stack and splits nothing. */
#define FILLS 4
static struct fill {
	struct hz_job job;
	int owned;      /* 1 taken by a memset, 2 and counted in fills_owned once its range is written */
	uintptr_t frame; /* its caller's frame */
} fills[FILLS];
static HZ_TLS struct fill *mine;
static HZ_TLS uint32_t mine_gen;
static int fills_owned; /* slots owned, for a free that finds none at once */

/* Ends fill f (its helpers stopped and waited for, never bounded: a
 * store in flight cannot be taken back) and frees its slot. */
static void fill_end(struct fill *f)
{
	hz_job_end(&f->job, 0);
	if (mine == f)
		mine = NULL;
	if (__atomic_exchange_n(&f->owned, 0, __ATOMIC_RELEASE) == 2)
		__atomic_fetch_sub(&fills_owned, 1, __ATOMIC_RELAXED);
}

static struct fill *fill_take(void)
{
	for (int i = 0; i < FILLS; i++) {
		struct fill *f = &fills[i];
		if (!__atomic_load_n(&f->owned, __ATOMIC_RELAXED) && !__atomic_load_n(&f->job.in_step, __ATOMIC_SEQ_CST) &&
		    !__atomic_load_n(&f->job.holders, __ATOMIC_SEQ_CST) &&
		    !__atomic_exchange_n(&f->owned, 1, __ATOMIC_SEQ_CST))
			return f;
	}
	return NULL;
}

int hz_helpers_fill(void *p, int c, size_t size, int may_start, const int *refused, unsigned *used)
{
	if (threads < 2 || size < HZ_HELPERS_MIN)
		return 0;
	uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
	if (!may_run() || (!may_start && !hot()))
		return 0;
	struct fill *f = mine;
	if (f && __atomic_load_n(&f->job.gen, __ATOMIC_RELAXED) == mine_gen) {
		if (frame < f->frame)
			return 0; /* nested in a fill of this thread's (a signal handler) */
		fill_end(f); /* left by a jump the library did not see */
	}
	mine = NULL;
	if (!(f = fill_take()))
		return 0;
	/* The kernel as split fills of the size have learnt it, timed whole:
	 * what the cache does with a piece on each core is not what it does
	 * with a fill alone (arch/learn.c). */
	int arm = hz_learns(size) ? hz_learn_arm(HZ_LEARN_SPLIT, c, size) : -1;
	unsigned kernel = arm >= 0 ? hz_learn_kernel(c, arm) : hz_policy_pick(&hz_policy, c, size);
	uint64_t t0 = arm >= 0 ? hz_arch_ticks() : 0;
	struct hz_job *j = &f->job;
	hz_job_init(j, HZ_JOB_FILL, p, size);
	j->c = c;
	j->kernel = kernel;
	hz_job_open(j);
	/* Counted once its block is written: a free or protection that finds
	 * the count finds the range (hz_helpers_end_in). */
	__atomic_store_n(&f->owned, 2, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&fills_owned, 1, __ATOMIC_SEQ_CST);
	uint32_t gen = __atomic_load_n(&j->gen, __ATOMIC_RELAXED);
	f->frame = frame;
	mine_gen = gen;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the slot is this thread's before a handler can look */
	mine = f;
	/* Owned, then the refusal read: a protection of the block set
	 * meanwhile finds the fill (hz_helpers_end_in), or is found here. */
	if ((refused && __atomic_load_n(refused, __ATOMIC_SEQ_CST)) || !offer(j, may_start)) {
		fill_end(f);
		return 0;
	}
	int cancel = hz_os_cancel_off(); /* the wait below is never left half way */
	hz_job_steps(j, gen, 0, 0);
	if (__atomic_load_n(&j->gen, __ATOMIC_SEQ_CST) != gen) {
		/* Ended under this call (a jump out of a handler nested in it,
		 * or a free of the block): which steps were done is not known,
		 * so every byte is written here. */
		hz_fill(kernel, p, c, size);
	} else {
		unoffer(j);
		/* Every byte is written before this returns: a helper's step in
		 * flight is waited for (it started on an idle core). */
		fill_end(f);
		if (arm >= 0)
			hz_learn_record(HZ_LEARN_SPLIT, c, size, arm, hz_arch_ticks() - t0);
	}
	hz_os_cancel_restore(cancel);
	add(&n.fills, 1);
	*used = kernel;
	return 1;
}

void hz_helpers_jumped(void)
{
	struct fill *f = mine;
	if (f && __atomic_load_n(&f->job.gen, __ATOMIC_RELAXED) == mine_gen)
		fill_end(f);
	mine = NULL;
}

void hz_helpers_end_in(const void *p, size_t size)
{
	if (hz_likely(!__atomic_load_n(&fills_owned, __ATOMIC_SEQ_CST)))
		return;
	uintptr_t lo = (uintptr_t)p, hi = lo + size;
	for (int i = 0; i < FILLS; i++) {
		struct fill *f = &fills[i];
		if (__atomic_load_n(&f->owned, __ATOMIC_ACQUIRE) != 2)
			continue;
		uintptr_t a = (uintptr_t)f->job.p;
		if (a < hi && lo < a + f->job.size)
			fill_end(f);
	}
}

/* ---- life ---- */

void hz_helpers_setup(unsigned nthreads)
{
	cpus = hz_os_cpus();
	threads = nthreads ? nthreads : cpus;
}

void hz_helpers_allow(void)
{
	hz_crew_allow(&crew, 1);
}

int hz_helpers_quiesce(int forever, uint64_t bound_ns)
{
	/* Helpers take no more steps: a fill's caller does the rest. */
	__atomic_store_n(&helpers_ending, 1, __ATOMIC_RELEASE);
	int was = hz_crew_quiesce(&crew, forever, bound_ns);
	__atomic_store_n(&helpers_ending, 0, __ATOMIC_RELEASE);
	return was;
}

void hz_helpers_exit(void)
{
	hz_helpers_quiesce(1, 20 * 1000000u);
}

void hz_helpers_fork_prepare(void)
{
	hz_crew_fork_prepare(&crew);
}

void hz_helpers_fork_parent(void)
{
	hz_crew_fork_parent(&crew);
}

void hz_helpers_fork_child(void)
{
	/* No helper runs in the child, none holds a job, no fill is in
	 * flight but the forking thread's (left by the fork's return); its
	 * counters start from zero. */
	pool.job = NULL;
	pool.polling = 0;
	pool.idle = 0;
	pool.hot_until = 0;
	helpers_ending = 0;
	for (int i = 0; i < FILLS; i++) {
		/* A fill of the forking thread (a fork from a signal handler
		 * in memset) is ended: its caller writes every byte itself. */
		struct hz_job *j = &fills[i].job;
		uint32_t g = (uint32_t)((j->next >> GEN_SHIFT) + 1) & GEN_MASK;
		j->gen = g;
		j->next = (uint64_t)g << GEN_SHIFT;
		j->holders = j->in_step = 0;
		fills[i].owned = 0;
	}
	fills_owned = 0;
	mine = NULL;
	n = (struct hz_helpers_stats){0};
	hz_crew_fork_child(&crew);
}

void hz_helpers_stats(struct hz_helpers_stats *out)
{
	out->populated = __atomic_load_n(&n.populated, __ATOMIC_RELAXED);
	out->filled = __atomic_load_n(&n.filled, __ATOMIC_RELAXED);
	out->fills = __atomic_load_n(&n.fills, __ATOMIC_RELAXED);
	out->starts = __atomic_load_n(&crew.starts, __ATOMIC_RELAXED);
	out->start_failures = __atomic_load_n(&crew.start_failures, __ATOMIC_RELAXED);
	out->sched_fallbacks = __atomic_load_n(&crew.sched_fallbacks, __ATOMIC_RELAXED);
	out->raised_waits = __atomic_load_n(&n.raised_waits, __ATOMIC_RELAXED);
	out->bounded_waits = __atomic_load_n(&n.bounded_waits, __ATOMIC_RELAXED);
	out->busy = __atomic_load_n(&n.busy, __ATOMIC_RELAXED);
	out->late = __atomic_load_n(&n.late, __ATOMIC_RELAXED);
	out->preempted = __atomic_load_n(&n.preempted, __ATOMIC_RELAXED);
	out->threads = threads;
	out->helpers = wanted();
}
