/* invisible-env: HUGEZERO_THREADS=2 */
/* invisible-needs: root idle */
/* A signal handler leaves a large memset by siglongjmp (memset is
 * async-signal-safe, and POSIX lets a handler leave by siglongjmp), then
 * the program frees the block and at once callocs the same size: every
 * byte of the new block must be zero, as under glibc. Whatever the
 * library shared of that memset with its helpers must be over, or taken
 * back, before the block's life ends; and nothing the jump left behind
 * may stop later large memsets from being split over the helpers.
 *
 * Variants, each a process of its own: the freed block recycled by the
 * calloc (free, calloc), and given back first (free, malloc_trim(0),
 * calloc: the calloc's pages are new, known zero).
 *
 * The signal comes from a thread of the program at a point within the
 * memset's measured length; a round counts when the jump really left the
 * memset (a flag set around the call). In the library's run, large
 * memsets of a block before and after a jump must be split over the
 * helpers (helpers.fills grows, within a second of tries), and at least one
 * interrupted memset must have had a helper's part, or the case judged
 * nothing. */
#include "invisible.h"

#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>

#define SIZE ((size_t)192 << 20) /* the helpers take memsets from 64 MiB */
#define ROUNDS 4                 /* interrupted rounds wanted */
#define BUDGET_NS ((uint64_t)12 * 1000000000u)

static sigjmp_buf env;
static volatile sig_atomic_t in_memset, jumped;
static pthread_t main_thread;
static sem_t arm, fired;
static volatile uint64_t delay_ns;

static void on_usr1(int sig)
{
	(void)sig;
	if (in_memset) {
		in_memset = 0;
		jumped = 1;
		siglongjmp(env, 1);
	}
}

static void *kicker(void *arg)
{
	(void)arg;
	for (;;) {
		while (sem_wait(&arm) && errno == EINTR)
			;
		sleep_ns(delay_ns);
		pthread_kill(main_thread, SIGUSR1);
		sem_post(&fired);
	}
	return NULL;
}

/* memset(p, c, SIZE), timed; in the library's run, again (for up to a
 * second: a helper starved on a busy machine may hold the last job a
 * while) until one was split over the helpers. Its length in ns, 0 when
 * none was split. */
static uint64_t split_memset(unsigned char *p, int c)
{
	for (uint64_t end = now_ns() + 1000000000u; now_ns() < end;) {
		uint64_t f0 = under_hz() ? counter("helpers.fills") : 0, t0 = now_ns();
		memset(p, c, SIZE);
		uint64_t len = now_ns() - t0;
		if (!under_hz() || counter("helpers.fills") > f0)
			return len ? len : 1;
	}
	return 0;
}

static int rounds(int trim)
{
	main_thread = pthread_self();
	sem_init(&arm, 0, 0);
	sem_init(&fired, 0, 0);
	struct sigaction sa = {0};
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t t;
	if (pthread_create(&t, NULL, kicker, NULL))
		fail("pthread_create");

	int interrupted = 0, with_helper = 0, attempts = 0;
	size_t worst = 0;
	uint64_t end = now_ns() + BUDGET_NS;
	while ((interrupted < ROUNDS || (under_hz() && !with_helper)) && now_ns() < end) {
		attempts++;
		unsigned char *p = malloc(SIZE);
		if (!p)
			fail("malloc(%zu MiB)", SIZE >> 20);
		memset(p, 0, SIZE); /* in memory before the timed one */
		uint64_t len = split_memset(p, 0x11);
		if (!len)
			fail("%s, no large memset of a new block is split over the helpers (for a second)",
			     interrupted ? "after a memset left by siglongjmp" : "before any jump (was a core idle?)");
		/* A point within the memset: its first two thirds, varied. */
		delay_ns = len / 6 + (len / 2) * (uint64_t)(attempts % 4) / 4;
		volatile uint64_t h0 = helpers_work(); /* read after the jump */
		jumped = 0;
		if (!sigsetjmp(env, 1)) {
			in_memset = 1;
			sem_post(&arm);
			memset(p, 0xAB, SIZE);
			in_memset = 0;
		}
		/* The signal has been sent (it found the memset over, or the
		 * handler jumped): nothing in flight on the program's side. */
		while (sem_wait(&fired) && errno == EINTR)
			;
		if (!jumped) {
			free(p);
			continue;
		}
		uint64_t h1 = helpers_work();
		free(p);
		if (trim)
			malloc_trim(0);
		unsigned char *q = calloc(1, SIZE);
		if (!q)
			fail("calloc(%zu MiB)", SIZE >> 20);
		size_t bad = pages_not(q, 0, SIZE);
		/* Anything still writing shows now or a moment later. */
		sleep_ns(20 * 1000000u);
		size_t later = pages_not(q, 0, SIZE);
		bad = later > bad ? later : bad;
		interrupted++;
		with_helper += h1 > h0;
		worst = bad > worst ? bad : worst;
		note("round %d: memset left after %.1f of %.1f ms by siglongjmp%s; calloc: %zu non-zero pages of %zu",
		     interrupted, delay_ns / 1e6, len / 1e6,
		     under_hz() ? (h1 > h0 ? ", a helper had a part" : ", no helper's part") : "", bad,
		     SIZE >> 12);
		free(q);
		if (worst)
			fail("calloc after a memset left by siglongjmp: %zu of %zu pages not zero", worst, SIZE >> 12);
	}
	if (interrupted < ROUNDS)
		fail("only %d of %d memsets were interrupted in %d attempts", interrupted, ROUNDS, attempts);
	if (under_hz() && !with_helper)
		unjudged("no interrupted memset had a helper's part in %d rounds: the case judged nothing (was a core idle?)",
		     interrupted);

	/* A later large memset of a new block is still split. */
	unsigned char *p = malloc(SIZE);
	if (!p)
		fail("malloc(%zu MiB)", SIZE >> 20);
	memset(p, 0, SIZE);
	if (!split_memset(p, 0x5A))
		fail("after the jumps, no large memset of a new block is split over the helpers (for a second)");
	if (first_not(p, 0x5A, SIZE) != SIZE)
		fail("memset after the jumps: byte %zu not written", first_not(p, 0x5A, SIZE));
	free(p);
	if (under_hz())
		note("%d memsets left by siglongjmp (%d with a helper's part), every calloc zero", interrupted,
		     with_helper);
	else
		note("%d memsets left by siglongjmp, every calloc zero", interrupted);
	return 0;
}

static int recycled(void)
{
	return rounds(0);
}

static int trimmed(void)
{
	return rounds(1);
}

int main(int argc, char **argv)
{
	static const struct variant v[] = {{"recycled", recycled, 20}, {"trimmed", trimmed, 20}};
	return run_variants(argc, argv, v, sizeof v / sizeof *v);
}
