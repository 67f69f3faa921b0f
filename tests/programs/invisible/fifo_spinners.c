/* invisible-env: HUGEZERO_THREADS=2 HUGEZERO_POPULATE=1 HUGEZERO_DIRTY_DECAY_MS=0 */
/* invisible-needs: root idle */
/* Real-time threads on every CPU: a program whose threads run SCHED_FIFO
 * leaves no CPU time to threads of lower classes (but for the kernel's
 * small share for them). Its own calls must not wait for such a thread: a
 * library helper at SCHED_IDLE, or raised to normal priority, preempted
 * in a step that free waits for, or holding the process's memory map
 * lock, may not run again until the spinners stop.
 *
 * Spinner threads, one pinned to each CPU at SCHED_FIFO priority 10, spin
 * in bursts (each bounded: BURST_MS, BURSTS of them, up to BURSTS_MAX
 * while no helper has taken part, and never past HARD_S from the start);
 * the main thread, at SCHED_FIFO priority
 * 20, mallocs 256 MiB blocks, fresh each time (HUGEZERO_DIRTY_DECAY_MS=0
 * gives a freed block back at once) and populated over the helpers
 * (HUGEZERO_POPULATE=1), and frees them, over and over while the spinners
 * spin. Each burst starts during a malloc: a thread at SCHED_FIFO
 * priority 30 releases the spinners once a helper has populated a step of
 * that block (helpers.populated_bytes grows: the helper is at work, most
 * likely inside its next step), or else as the malloc returns (a step of
 * a helper may still be in flight); under glibc as the malloc starts.
 * Every malloc and every free must return within BOUND_MS. In the
 * library's run a helper must have taken part in at least one of the
 * mallocs a burst started in, or the case judged nothing. */
#include "invisible.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>

#define SIZE ((size_t)256 << 20)
#define BURSTS 5
/* A helper at SCHED_IDLE runs only on an idle core: on a machine busy
 * with other work, it may take part in none of a few bursts' mallocs. */
#define BURSTS_MAX 10
#define BURST_MS 600
#define GAP_MS 100
#define HARD_S 8
#define BOUND_MS 300
#define CPUS_MAX 64

static int ncpu, cpu_ids[CPUS_MAX];
static sem_t go[CPUS_MAX], rel;
static volatile uint64_t burst_end, hard_end;
static volatile int quit;

static int fifo(pthread_t t, int prio)
{
	struct sched_param sp = {.sched_priority = prio};
	return pthread_setschedparam(t, SCHED_FIFO, &sp);
}

static void *spinner(void *arg)
{
	int i = (int)(intptr_t)arg;
	for (;;) {
		while (sem_wait(&go[i]) && errno == EINTR)
			;
		if (quit)
			return NULL;
		while (now_ns() < burst_end && now_ns() < hard_end)
			;
	}
}

/* Armed by the main thread as it calls malloc (attempt_over is set as the
 * malloc returns); acknowledges once the spinners are released. */
static sem_t ack;
static volatile int attempt_over;

static void *releaser(void *arg)
{
	(void)arg;
	for (;;) {
		while (sem_wait(&rel) && errno == EINTR)
			;
		if (quit)
			return NULL;
		uint64_t w0 = helpers_work();
		while (under_hz() && !attempt_over && helpers_work() == w0)
			sleep_ns(20000);
		burst_end = now_ns() + (uint64_t)BURST_MS * 1000000u;
		for (int i = 0; i < ncpu; i++)
			sem_post(&go[i]);
		sem_post(&ack);
	}
}

static pthread_t start(void *(*fn)(void *), void *arg, int prio, int cpu)
{
	pthread_attr_t a;
	pthread_t t;
	struct sched_param sp = {.sched_priority = prio};
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	if (cpu >= 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(cpu, &s);
		pthread_attr_setaffinity_np(&a, sizeof s, &s);
	}
	int e = pthread_create(&t, &a, fn, arg);
	pthread_attr_destroy(&a);
	if (e)
		fail("pthread_create at SCHED_FIFO %d: %s", prio, strerror(e));
	return t;
}

static uint64_t worst_malloc, worst_free;
static int calls;

/* One malloc and free of a fresh block, each timed against the bound. */
static void one(const char *when)
{
	uint64_t t0 = now_ns();
	unsigned char *p = malloc(SIZE);
	uint64_t t1 = now_ns();
	attempt_over = 1;
	if (!p)
		fail("malloc(%zu MiB)", SIZE >> 20);
	p[0] = 1;
	free(p);
	uint64_t t2 = now_ns();
	calls++;
	worst_malloc = t1 - t0 > worst_malloc ? t1 - t0 : worst_malloc;
	worst_free = t2 - t1 > worst_free ? t2 - t1 : worst_free;
	if (t1 - t0 > (uint64_t)BOUND_MS * 1000000u)
		fail("malloc(%zu MiB) %s took %.0f ms (bound %d ms)", SIZE >> 20, when, (t1 - t0) / 1e6, BOUND_MS);
	if (t2 - t1 > (uint64_t)BOUND_MS * 1000000u)
		fail("free of a %zu MiB block %s took %.0f ms (bound %d ms)", SIZE >> 20, when, (t2 - t1) / 1e6,
		     BOUND_MS);
}

int main(void)
{
	alarm(30);
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set))
		fail("sched_getaffinity: %s", strerror(errno));
	for (int c = 0; c < CPU_SETSIZE && ncpu < CPUS_MAX; c++)
		if (CPU_ISSET(c, &set))
			cpu_ids[ncpu++] = c;
	int e = fifo(pthread_self(), 20);
	if (e == EPERM)
		skip("SCHED_FIFO refused (not root, or no real-time runtime in this cpu cgroup)");
	if (e)
		fail("SCHED_FIFO: %s", strerror(e));
	sem_init(&rel, 0, 0);
	sem_init(&ack, 0, 0);
	pthread_t sp[CPUS_MAX], rt;
	hard_end = now_ns() + (uint64_t)HARD_S * 1000000000u;
	for (int i = 0; i < ncpu; i++) {
		sem_init(&go[i], 0, 0);
		sp[i] = start(spinner, (void *)(intptr_t)i, 10, cpu_ids[i]);
	}
	rt = start(releaser, NULL, 30, -1);

	one("before any burst");
	int bursts = 0, helped = 0;
	while ((bursts < BURSTS || (under_hz() && !helped && bursts < BURSTS_MAX)) &&
	       now_ns() + (uint64_t)BURST_MS * 1000000u < hard_end) {
		sleep_ns((uint64_t)GAP_MS * 1000000u); /* the last burst's leftovers run */
		uint64_t w0 = helpers_work();
		attempt_over = 0;
		burst_end = hard_end; /* until the releaser sets it */
		sem_post(&rel);
		one("as a burst of spinners starts");
		while (sem_wait(&ack) && errno == EINTR)
			;
		bursts++;
		helped += helpers_work() > w0;
		while (now_ns() < burst_end && now_ns() < hard_end)
			one("while spinners run on every CPU");
	}
	quit = 1;
	burst_end = 0;
	sem_post(&rel);
	for (int i = 0; i < ncpu; i++)
		sem_post(&go[i]);
	for (int i = 0; i < ncpu; i++)
		pthread_join(sp[i], NULL);
	pthread_join(rt, NULL);
	if (under_hz() && !helped)
		unjudged("no helper took part in a malloc a burst started in (%d bursts): the case judged nothing (was a "
		     "core idle?)",
		     bursts);
	char part[64] = "";
	if (under_hz())
		snprintf(part, sizeof part, " (%d as a helper populated)", helped);
	note("%d bursts of %d SCHED_FIFO spinners%s, %d mallocs and frees: slowest malloc %.1f ms, free %.1f ms",
	     bursts, ncpu, part, calls, worst_malloc / 1e6, worst_free / 1e6);
	return 0;
}
