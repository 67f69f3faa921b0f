/* The background zeroer's thread (zeroer.h). */
#define _GNU_SOURCE /* pthread_cond_clockwait (glibc 2.30) */
#include <pthread.h>
#include <time.h>

#include "../os/os.h"
#include "claim.h"
#include "fresh.h"
#include "work.h"
#include "zeroer.h"

int hz_zeroer_enabled;

enum { NOT_STARTED, STARTING, RUNNING, FAILED };
/* The thread's state, under its lock. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the thread's sleep, and its end */
	int state, pending, sleeping, allowed, stop;
	int tid;           /* the running thread's id, 0 once it is ending */
	uint64_t gen;      /* bumped by fork_child: a thread of an older one stops */
	uint64_t child_at; /* in a forked child: when it was forked */
} thread = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NOT_STARTED, 0, 0, 0, 0, 0, 0, 0};

/* The thread's counters; a forked child's start from zero. */
static struct {
	uint64_t starts, start_failures, sched_fallbacks, cpu_ns, wakeups, exits;
} n;
static int sched_got;

/* How long the zeroer sleeps with nothing to do while the arenas hold
 * free memory: it runs the decay on waking. */
#define IDLE_TICK_MS 250
/* The thread ends after this long with nothing to do. */
#define LINGER_NS ((uint64_t)1000000000u)
/* A forked child starts one only once it has lived this long: a child
 * that frees and exits at once has no use for it. */
#define CHILD_WAIT_NS ((uint64_t)1000000000u)

static void add(uint64_t *v, uint64_t k)
{
	__atomic_fetch_add(v, k, __ATOMIC_RELAXED);
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
	/* Lowered before its id is published: exit may raise it again. */
	enum hz_sched s = hz_os_sched_background();
	__atomic_store_n(&sched_got, (int)s, __ATOMIC_RELAXED);
	if (s != HZ_SCHED_IDLE)
		add(&n.sched_fallbacks, 1);
	pthread_mutex_lock(&thread.lock);
	if (thread.gen == gen) {
		thread.state = RUNNING;
		thread.tid = hz_os_thread_id();
	}
	pthread_mutex_unlock(&thread.lock);
	uint64_t cpu_base = hz_os_thread_cpu_ns(); /* this thread's clock */
	uint64_t idle_since = hz_os_now_ns(), deferred_since = 0;
	for (;;) {
		int stop = __atomic_load_n(&thread.stop, __ATOMIC_RELAXED);
		if (!stop)
			hz_fresh_probe_if_due(1); /* fresh memory's measurement again, off the program's threads */
		int worked = stop ? 0 : hz_work_once();
		uint64_t cpu = hz_os_thread_cpu_ns();
		add(&n.cpu_ns, cpu - cpu_base);
		cpu_base = cpu;
		if (worked != HZ_WORK_DEFERRED)
			deferred_since = 0;
		else if (!deferred_since)
			deferred_since = hz_os_now_ns();
		if (worked == HZ_WORK_DEFERRED && hz_os_now_ns() - deferred_since < LINGER_NS) {
			/* The program is faulting: look again in a millisecond
			 * (two system calls), to fill the reserve once it stops;
			 * for at most LINGER in a row, then at the decay's tick. */
			hz_os_sleep_ms(1);
			continue;
		}
		if (worked == 1) {
			idle_since = hz_os_now_ns();
			continue;
		}
		int holds = hz_work_decay();
		if (holds)
			idle_since = hz_os_now_ns(); /* the linger counts from when the decay is done */
		pthread_mutex_lock(&thread.lock);
		/* A forked child's copy never runs; and with nothing to do for
		 * LINGER and no free memory left for the decay to release, or at
		 * exit, the thread ends: a process that exits later has no
		 * SCHED_IDLE thread left to tear its memory down (the last thread
		 * out does), slowly on a busy machine. The next large free starts
		 * another. */
		if (thread.gen != gen || thread.stop || (!thread.pending && !holds && hz_os_now_ns() - idle_since >= LINGER_NS)) {
			if (thread.gen == gen) {
				thread.state = NOT_STARTED;
				thread.tid = 0;
				add(&n.exits, 1);
			}
			pthread_cond_broadcast(&thread.wake);
			pthread_mutex_unlock(&thread.lock);
			return NULL;
		}
		if (!thread.pending) {
			struct timespec t = after(holds ? (uint64_t)IDLE_TICK_MS * 1000000u : LINGER_NS);
			thread.sleeping = 1;
			pthread_cond_clockwait(&thread.wake, &thread.lock, CLOCK_MONOTONIC, &t);
			thread.sleeping = 0;
			add(&n.wakeups, 1);
		}
		thread.pending = 0;
		pthread_mutex_unlock(&thread.lock);
	}
	return NULL;
}

static HZ_NOINLINE void start(void)
{
	pthread_mutex_lock(&thread.lock);
	int go = thread.state == NOT_STARTED && thread.allowed && !thread.stop &&
		 (!thread.child_at || hz_os_now_ns() - thread.child_at >= CHILD_WAIT_NS);
	if (go) {
		thread.state = STARTING;
		thread.pending = 0;
	}
	uint64_t gen = thread.gen;
	pthread_mutex_unlock(&thread.lock);
	if (!go)
		return;
	int e = hz_os_thread_start(zeroer_main, (void *)(uintptr_t)gen);
	if (e) {
		pthread_mutex_lock(&thread.lock);
		if (thread.gen == gen)
			thread.state = FAILED;
		pthread_mutex_unlock(&thread.lock);
	}
	add(e ? &n.start_failures : &n.starts, 1);
}

void hz_zeroer_kick(int may_start, int wake)
{
	if (!hz_zeroer_enabled)
		return;
	int state = __atomic_load_n(&thread.state, __ATOMIC_RELAXED);
	if (hz_likely(state == RUNNING)) {
		if (!wake || __atomic_load_n(&thread.pending, __ATOMIC_RELAXED))
			return;
		pthread_mutex_lock(&thread.lock);
		if (thread.state == RUNNING) {
			thread.pending = 1;
			if (thread.sleeping)
				pthread_cond_signal(&thread.wake);
			pthread_mutex_unlock(&thread.lock);
			return;
		}
		pthread_mutex_unlock(&thread.lock);
		state = NOT_STARTED; /* it ended meanwhile */
	}
	/* The first start at a large free or calloc; once started, any large
	 * call that has work for it starts it again. */
	if (state == NOT_STARTED && (may_start || (wake && __atomic_load_n(&n.starts, __ATOMIC_RELAXED))))
		start();
}

void hz_zeroer_exit(void)
{
	pthread_mutex_lock(&thread.lock);
	thread.allowed = 0;
	thread.stop = 1;
	pthread_cond_signal(&thread.wake);
	/* Once the process exits, its last thread tears its memory down and
	 * the parent waits for that; a SCHED_IDLE zeroer, starved on a busy
	 * machine, took seconds so, whether mid-clear or on its way out. So a
	 * running one goes back to normal priority at once, where that is
	 * permitted (CAP_SYS_NICE or RLIMIT_NICE), before it is asked to end:
	 * its way out too runs at normal priority. Its id is valid: it clears
	 * it under this lock before it ends. */
	int raised = thread.state == RUNNING && thread.tid && !hz_os_sched_normal(thread.tid);
	/* A bounded wait: long enough for a thread that gets the CPU to end
	 * its step; exit never waits for a starved one. */
	struct timespec t = after((raised ? 200 : 20) * 1000000u);
	while (thread.state == RUNNING || thread.state == STARTING) {
		if (!raised && thread.state == RUNNING && thread.tid && !hz_os_sched_normal(thread.tid)) {
			raised = 1; /* it was starting: raised once it runs */
			t = after(200 * 1000000u);
		}
		if (pthread_cond_clockwait(&thread.wake, &thread.lock, CLOCK_MONOTONIC, &t))
			break;
	}
	pthread_mutex_unlock(&thread.lock);
}

void hz_zeroer_allow(int allowed)
{
	pthread_mutex_lock(&thread.lock);
	thread.allowed = allowed;
	pthread_mutex_unlock(&thread.lock);
}

void hz_zeroer_stats(struct hz_zeroer_stats *out)
{
	out->running = __atomic_load_n(&thread.state, __ATOMIC_RELAXED) == RUNNING;
	out->sched = out->running ? __atomic_load_n(&sched_got, __ATOMIC_RELAXED) : 0;
	out->starts = __atomic_load_n(&n.starts, __ATOMIC_RELAXED);
	out->start_failures = __atomic_load_n(&n.start_failures, __ATOMIC_RELAXED);
	out->sched_fallbacks = __atomic_load_n(&n.sched_fallbacks, __ATOMIC_RELAXED);
	out->cleared = __atomic_load_n(&hz_work_n.cleared, __ATOMIC_RELAXED);
	out->populated = __atomic_load_n(&hz_work_n.populated, __ATOMIC_RELAXED);
	out->abandoned = __atomic_load_n(&hz_work_n.abandoned, __ATOMIC_RELAXED);
	out->waits = __atomic_load_n(&hz_claim_waits, __ATOMIC_RELAXED);
	out->cpu_ns = __atomic_load_n(&n.cpu_ns, __ATOMIC_RELAXED);
	out->wakeups = __atomic_load_n(&n.wakeups, __ATOMIC_RELAXED);
	out->exits = __atomic_load_n(&n.exits, __ATOMIC_RELAXED);
}

void hz_zeroer_fork_prepare(void)
{
	pthread_mutex_lock(&thread.lock);
}

void hz_zeroer_fork_parent(void)
{
	pthread_mutex_unlock(&thread.lock);
}

void hz_zeroer_fork_child(void)
{
	/* The child's zeroer starts when the child needs one. */
	thread.state = NOT_STARTED;
	thread.pending = thread.sleeping = 0;
	thread.tid = 0;
	thread.gen++;
	thread.child_at = hz_os_now_ns();
	n = (typeof(n)){0};
	pthread_mutex_unlock(&thread.lock);
	pthread_cond_init(&thread.wake, NULL);
}
