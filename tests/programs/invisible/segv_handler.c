/* invisible-env: HUGEZERO_THREADS=2 */
/* invisible-needs: root idle */
/* A program's own SIGSEGV handler over its own protected memory, as
 * garbage collectors' write barriers and libsigsegv's users have: the
 * program protects pages of a large block it allocated and memsets the
 * block; its handler unprotects the faulting pages and the memset goes
 * on. Under glibc every fault reaches the handler and the memset ends
 * with every byte written. The library must not take such a fault in a
 * thread of its own (a helper sharing the memset), where the handler
 * cannot run.
 *
 * Variants, each a process of its own:
 *   readonly  512 MiB, the whole block mprotect'ed PROT_READ after a first
 *             memset; the handler makes the 2 MiB around a fault writable
 *   none_page 256 MiB, one PROT_NONE page in its middle part (at another
 *             place each round); the handler makes it writable again
 * Each protected memset is repeated over rounds (in the library's run for
 * 3 s); there a helper must have taken part in a memset of another block
 * of the same size just before each round (helpers.filled_bytes grows:
 * tries for up to 2 s), so that the helpers are at work when the
 * protected one starts. (The library may decline to share a block the
 * program protected, as it does: the warm-up is of another block.) */
#include "invisible.h"

#include <signal.h>
#include <sys/mman.h>

#define STEP ((uintptr_t)2 << 20)
#define PAGE ((uintptr_t)4096)

static uintptr_t lo, hi;                /* the protected range: its pages */
static volatile unsigned long faults;   /* handled */
static uintptr_t span;                  /* what the handler unprotects: STEP or PAGE */

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr;
	if (a < lo || a >= hi) { /* not ours: the fault again, by default */
		signal(sig, SIG_DFL);
		return;
	}
	uintptr_t s = a & ~(span - 1), e = s + span;
	s = s < lo ? lo : s;
	e = e > hi ? hi : e;
	if (mprotect((void *)s, e - s, PROT_READ | PROT_WRITE)) {
		signal(sig, SIG_DFL);
		return;
	}
	__atomic_fetch_add(&faults, 1, __ATOMIC_RELAXED);
}

static void handle(void)
{
	struct sigaction sa = {0};
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

/* memset(p, c, n); in the library's run again (for up to 8 s: a helper
 * runs at SCHED_IDLE, late on a busy host) until a helper took part in
 * one. memset alone never wakes a helper (no system call), and helpers
 * that missed every offer for a second stop polling: a large allocation
 * each time around wakes them again. */
static void warm(unsigned char *p, int c, size_t n)
{
	uint64_t end = now_ns() + 8000000000u;
	for (int tries = 0;; tries++) {
		uint64_t w0 = under_hz() ? counter("helpers.filled_bytes") : 0;
		if (tries)
			free(malloc((size_t)64 << 20));
		memset(p, c, n);
		if (!under_hz() || counter("helpers.filled_bytes") > w0)
			return;
		if (now_ns() > end)
			unjudged("no helper took part in a large memset for 8 s (was a core idle?): the case would judge "
			     "nothing (helpers: %llu threads, %llu fills, %llu busy, %llu late, %llu preempted)",
			     (unsigned long long)counter("helpers.threads"), (unsigned long long)counter("helpers.fills"),
			     (unsigned long long)counter("helpers.busy"), (unsigned long long)counter("helpers.late"),
			     (unsigned long long)counter("helpers.preempted"));
	}
}

static unsigned char *block(size_t n)
{
	unsigned char *p = malloc(n);
	if (!p)
		fail("malloc(%zu MiB)", n >> 20);
	lo = ((uintptr_t)p + PAGE - 1) & ~(PAGE - 1);
	hi = ((uintptr_t)p + n) & ~(PAGE - 1);
	return p;
}

/* Rounds of: a memset of another block a helper took part in, p's pages
 * protected by protect(r), memset(p, c, n), every byte checked; at least min rounds,
 * more for up to 3 s in the library's run (the more memsets a helper is
 * at work in, the surer a fault of its own is seen). The rounds where a
 * helper wrote part of the protected memset are counted in *helped. */
static int rounds(unsigned char *p, size_t n, int min, void (*protect)(int), int one_fault, int *helped)
{
	uint64_t end = now_ns() + 3000000000u;
	int r = 0;
	unsigned char *w = malloc(n); /* the warm-up's block */
	if (!w)
		fail("malloc(%zu MiB)", n >> 20);
	*helped = 0;
	for (; r < min || (under_hz() && now_ns() < end); r++) {
		int c = 0x40 + r % 64;
		memset(p, c ^ 0xFF, n);
		warm(w, c ^ 0xFF, n);
		protect(r);
		unsigned long f0 = faults;
		uint64_t w0 = helpers_work();
		memset(p, c, n);
		*helped += helpers_work() > w0;
		size_t at = first_not(p, c, n);
		if (at != n)
			fail("round %d: byte %zu of the block not written", r, at);
		if (faults == f0)
			fail("round %d: no fault reached the handler", r);
		if (one_fault && faults != f0 + 1)
			fail("round %d: %lu faults reached the handler, not 1", r, faults - f0);
	}
	free(w);
	return r;
}

/* " (N with a helper's part)" in the library's run. */
static const char *part(int helped)
{
	static char buf[64];
	snprintf(buf, sizeof buf, " (%d with a helper's part)", helped);
	return under_hz() ? buf : "";
}

static void protect_all(int r)
{
	(void)r;
	if (mprotect((void *)lo, hi - lo, PROT_READ))
		fail("mprotect: %s", strerror(errno));
}

static int readonly(void)
{
	const size_t n = (size_t)512 << 20;
	unsigned char *p = block(n);
	span = STEP;
	handle();
	int helped, r = rounds(p, n, 3, protect_all, 0, &helped);
	note("%d memsets of 512 MiB over PROT_READ%s: %lu faults handled", r, part(helped), faults);
	return 0;
}

/* One page PROT_NONE in the middle part, in another 2 MiB step each round. */
static void protect_page(int r)
{
	uintptr_t page = (lo + (hi - lo) / 2 + (intptr_t)(r % 16 - 8) * (intptr_t)(STEP + PAGE)) & ~(PAGE - 1);
	if (mprotect((void *)page, PAGE, PROT_NONE))
		fail("mprotect: %s", strerror(errno));
}

static int none_page(void)
{
	const size_t n = (size_t)256 << 20;
	unsigned char *p = block(n);
	span = PAGE;
	handle();
	int helped, r = rounds(p, n, 8, protect_page, 1, &helped);
	note("%d memsets of 256 MiB over a PROT_NONE page%s: each fault handled", r, part(helped));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct variant v[] = {{"readonly", readonly, 20}, {"none_page", none_page, 20}};
	return run_variants(argc, argv, v, sizeof v / sizeof *v);
}
