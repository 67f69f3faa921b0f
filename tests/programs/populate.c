/* Fresh blocks populated where the program will touch them
 * (tests/programs/populate.sh). Each mode exits 0, or 1 with a message:
 *
 *   learn     dense blocks, freed: the first is not populated (nothing
 *             learnt yet), the next ones are, before the program touches
 *             them (their pages in memory right after calloc, all zero)
 *   kept      the same with blocks never freed: read 10 ms after handout
 *   sparse    blocks of which the program touches 1% of the pages, one
 *             in 100, are never populated on small pages (on huge ones
 *             the program's touches fault in every huge page: populating
 *             them adds nothing)
 *   pressed   dense blocks in a memory cgroup near its limit: none
 *             populated, the refusal counted
 *   off       HUGEZERO_POPULATE=0: no block populated
 *   on        HUGEZERO_POPULATE=1: the first block populated already
 *   helpers   256 MiB blocks populated with helpers (HUGEZERO_THREADS=2):
 *             one helper, its steps counted, each block in memory (100 ms
 *             on: the caller may leave the rest to the helper) and zero
 *   nohelpers HUGEZERO_THREADS=1: populated and set by the caller alone
 *   fill      after a calloc over the helper, 192 MiB memsets split over
 *             it: every byte set, zero or not, none around changed
 *   recycled  calloc of a recycled dirty 96 MiB block, its clear split
 *             over the helper: every byte zero
 *   freed     blocks freed as a helper may still populate them: no
 *             page of one comes into memory after the free, nothing more is
 *             counted populated; a helper took part, and some were freed
 *             with the rest of their steps left to it
 *   glibc     the learn pattern under any allocator: every calloc zero
 * Exit status 77 where the kernel cannot populate (before Linux 5.14).
 * The helpers' modes (helpers, fill, recycled, freed) fail where no helper
 * took part: populate.sh runs them as root where /proc/loadavg says a core
 * is idle, and the modes give the helpers SCHED_FIFO on a CPU of their
 * own (give_helpers_a_core), so that they take part on a busy host too.
 *
 * "Populated" is read from the pages (mincore) and from the library's
 * counters (hz_stat, found with dlsym: the modes but glibc need it). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define MIB ((size_t)1 << 20)

static int (*stat_fn)(const char *, uint64_t *);

static void fail(const char *what)
{
	fprintf(stderr, "%s\n", what);
	exit(1);
}

static uint64_t stat_of(const char *name)
{
	uint64_t v = 0;
	if (!stat_fn || stat_fn(name, &v))
		fail("hz_stat missing: run under the library");
	return v;
}

/* Share of the block's whole pages in memory, in 1/1024ths. */
static unsigned resident(const void *p, size_t n)
{
	uintptr_t lo = ((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1), hi = ((uintptr_t)p + n) & ~(uintptr_t)(PAGE - 1);
	size_t pages = (hi - lo) / PAGE, in = 0;
	unsigned char *v = malloc(pages);
	if (!v)
		fail("malloc failed");
	if (mincore((void *)lo, hi - lo, v)) { /* unmapped (released): none in memory */
		free(v);
		return 0;
	}
	for (size_t i = 0; i < pages; i++)
		in += v[i] & 1;
	free(v);
	return (unsigned)(in * 1024 / pages);
}

/* Every byte zero of the pages it will touch (one in `every` bytes' page;
 * a read of a page maps it, as a touch does). */
static void all_zero(const unsigned char *p, size_t n, size_t every)
{
	for (size_t i = 0; i < n; i += every)
		for (size_t k = i; k < i + PAGE && k < n; k += 64)
			if (p[k] || p[k + 63])
				fail("calloc returned a non-zero byte");
}

static void touch(unsigned char *p, size_t n, size_t every)
{
	for (size_t i = 0; i < n; i += every)
		p[i] = 1;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = {0, (long)ms * 1000000};
	nanosleep(&t, NULL);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* How long the helpers' modes go on, block after block, until a helper
 * took part: a helper comes too late for a block now and then, even at
 * SCHED_FIFO, where its core is in a long system call of another process
 * (on a kernel without preemption) or its virtual CPU is not running. */
#define HELPER_TRY_S 3.0

/* The helpers given a core of their own, for the modes that need one
 * (populate.sh runs them as root, in a mount namespace whose /proc/loadavg
 * says a core is idle, with no zeroer: every thread but this one is a
 * helper). Offered a job, a helper at SCHED_IDLE on a busy host wakes
 * more than 1 ms later and takes no step of it (helpers.c); at SCHED_FIFO
 * it runs at once, whatever else the core runs in user space. Not on
 * this thread's CPU: woken where it ran last, a SCHED_FIFO helper waits
 * there while this thread populates in the kernel (no preemption there on
 * a kernel built without it), 5 to 30 ms here. So this thread keeps to
 * the first CPU of its set, the helpers to the others. A helper's first
 * act is to set itself SCHED_IDLE: one not there yet (started, not yet
 * run) is waited for, up to a second, so that it does not undo the
 * change. Again before every block: a wait for a helper's step
 * (hz_job_wait) may have set it back to SCHED_IDLE. */
static void give_helpers_a_core(void)
{
	static cpu_set_t mine, theirs;
	int self = (int)syscall(SYS_gettid);
	if (!CPU_COUNT(&mine)) {
		if (sched_getaffinity(0, sizeof theirs, &theirs) || CPU_COUNT(&theirs) < 2)
			fail("the helpers' modes need two CPUs");
		for (int c = 0; !CPU_COUNT(&mine); c++)
			if (CPU_ISSET(c, &theirs)) {
				CPU_SET(c, &mine);
				CPU_CLR(c, &theirs);
			}
		if (sched_setaffinity(0, sizeof mine, &mine))
			fail("cannot keep to one CPU");
	}
	for (int tries = 0;; tries++) {
		int waiting = 0;
		DIR *d = opendir("/proc/self/task");
		if (!d)
			fail("cannot list the threads");
		for (struct dirent *e; (e = readdir(d));) {
			int tid = atoi(e->d_name), policy = tid > 0 && tid != self ? sched_getscheduler(tid) : SCHED_FIFO;
			struct sched_param sp = {1};
			if (policy == SCHED_IDLE && (sched_setaffinity(tid, sizeof theirs, &theirs) ||
						     sched_setscheduler(tid, SCHED_FIFO, &sp)) && errno != ESRCH)
				fail("cannot give a helper SCHED_FIFO (needs root)");
			waiting += policy == SCHED_OTHER;
		}
		closedir(d);
		if (!waiting)
			return;
		if (tries == 1000)
			fail("a helper not at SCHED_IDLE a second after it started");
		sleep_ms(1);
	}
}

/* No idle core was seen: /proc/loadavg did not say one was (the helpers'
 * modes are judged only where it does), or could not be read. */
static void need_idle_core(void)
{
	if (stat_of("helpers.busy")) {
		char msg[120];
		snprintf(msg, sizeof msg, "no idle core seen %llu time(s): run where /proc/loadavg says one is",
			 (unsigned long long)stat_of("helpers.busy"));
		fail(msg);
	}
}

/* Blocks of n bytes, each calloc'd, checked, touched (every page, or one
 * in 100), freed and trimmed unless kept; returns the residency of each right after
 * its calloc in r[]. */
static void blocks(size_t n, int count, size_t every, int keep, unsigned *r)
{
	for (int i = 0; i < count; i++) {
		unsigned char *p = calloc(1, n);
		if (!p)
			fail("calloc failed");
		r[i] = resident(p, n);
		all_zero(p, n, every);
		touch(p, n, every);
		sleep_ms(keep ? 15 : 1);
		if (!keep) {
			free(p);
			malloc_trim(0); /* the next block fresh again */
		}
	}
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	void *probe = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (probe == MAP_FAILED)
		fail("mmap failed");
	if (madvise(probe, PAGE, MADV_POPULATE_WRITE) && strcmp(mode, "glibc") && strcmp(mode, "off")) {
		printf("skip: no MADV_POPULATE_WRITE (Linux 5.14)\n");
		return 77;
	}
	munmap(probe, PAGE);
	stat_fn = (int (*)(const char *, uint64_t *))dlsym(RTLD_DEFAULT, "hz_stat");
	unsigned r[6];
	char msg[160];
	if (!strcmp(mode, "learn") || !strcmp(mode, "kept")) {
		blocks(32 * MIB, 6, PAGE, mode[0] == 'k', r);
		/* The first: all the program's to fault; the last ones
		 * populated, but for their sentinel and watched steps. */
		snprintf(msg, sizeof msg, "residency after calloc, in 1/1024: %u %u %u %u %u %u", r[0], r[1], r[2], r[3],
			 r[4], r[5]);
		if (r[0] > 128 || r[4] < 512 || r[5] < 512 || stat_of("populate.blocks") < 3 ||
		    stat_of("populate.bytes") < 3 * 16 * MIB)
			fail(msg);
		if (stat_of("populate.samples") < 1)
			fail("no block was read for its class");
	} else if (!strcmp(mode, "sparse")) {
		/* Kept: each block fresh, each read 10 ms on. */
		blocks(32 * MIB, 6, 100 * PAGE, 1, r);
		snprintf(msg, sizeof msg, "a sparse block was populated: %llu blocks, residency %u %u %u %u %u %u",
			 (unsigned long long)stat_of("populate.blocks"), r[0], r[1], r[2], r[3], r[4], r[5]);
		if (stat_of("populate.blocks") || r[5] > 64)
			fail(msg);
		if (stat_of("populate.samples") < 4)
			fail("the sparse blocks were not read");
	} else if (!strcmp(mode, "pressed")) {
		blocks(32 * MIB, 4, PAGE, 0, r);
		if (stat_of("populate.blocks") || !stat_of("populate.pressed") || r[3] > 128)
			fail("populated near the memory cgroup's limit");
	} else if (!strcmp(mode, "off")) {
		blocks(32 * MIB, 4, PAGE, 0, r);
		if (stat_of("populate.blocks") || r[3] > 128)
			fail("populated with HUGEZERO_POPULATE=0");
	} else if (!strcmp(mode, "on")) {
		blocks(32 * MIB, 1, PAGE, 0, r);
		snprintf(msg, sizeof msg, "first block's residency %u/1024, populate.blocks %llu", r[0],
			 (unsigned long long)stat_of("populate.blocks"));
		if (r[0] < 512 || stat_of("populate.blocks") != 1)
			fail(msg);
	} else if (!strcmp(mode, "helpers")) {
		/* Blocks until a helper took steps of one (the first calloc
		 * starts it, at SCHED_IDLE: it may come late for that block),
		 * for HELPER_TRY_S. */
		size_t n = 256 * MIB;
		double until = now_s() + HELPER_TRY_S;
		while (!stat_of("helpers.populated_bytes") && now_s() < until) {
			give_helpers_a_core();
			unsigned char *p = calloc(1, n);
			if (!p)
				fail("calloc failed");
			/* The caller may leave the rest to the helper, ahead of
			 * the program: in memory a little later, untouched. */
			unsigned in = resident(p, n), later = in;
			/* Up to a second: a huge page's first touch costs 0.1 to
			 * 5 ms here from one day to the next. */
			for (int w = 0; w < 50 && later < 512; w++) {
				sleep_ms(20);
				later = resident(p, n);
			}
			snprintf(msg, sizeof msg, "residency %u/1024 after calloc, %u/1024 up to 1 s on", in, later);
			if (later < 512 && !stat_of("helpers.preempted") && !stat_of("helpers.late"))
				fail(msg); /* unless the helper left: its core was busy */
			all_zero(p, n, PAGE);
			free(p);
			malloc_trim(0);
		}
		need_idle_core();
		snprintf(msg, sizeof msg, "helpers %llu, started %llu, their bytes %llu",
			 (unsigned long long)stat_of("helpers.helpers"), (unsigned long long)stat_of("helpers.starts"),
			 (unsigned long long)stat_of("helpers.populated_bytes"));
		if (stat_of("helpers.helpers") != 1 || stat_of("helpers.starts") < 1 ||
		    !stat_of("helpers.populated_bytes"))
			fail(msg);
	} else if (!strcmp(mode, "nohelpers")) {
		size_t n = 256 * MIB;
		unsigned char *p = calloc(1, n);
		if (!p)
			fail("calloc failed");
		memset(p, 1, n);
		if (stat_of("helpers.helpers") || stat_of("helpers.starts") || !stat_of("populate.bytes"))
			fail("a helper with HUGEZERO_THREADS=1, or nothing populated");
		free(p);
	} else if (!strcmp(mode, "fill")) {
		/* First a calloc of 256 MiB populated over the helper, which
		 * may leave the rest to it: the memsets after must find the
		 * pool free again. Then memsets of 192 MiB (not a multiple of a
		 * step, not aligned to one) split over the helpers: every byte
		 * set, the bytes around it untouched, zero and other bytes;
		 * two, and more until a helper took part (HELPER_TRY_S). */
		unsigned char *first = calloc(1, 256 * MIB);
		if (!first)
			fail("calloc failed");
		sleep_ms(100);
		size_t n = 192 * MIB + 12345, pad = 4096 + 77;
		unsigned char *b = malloc(n + 2 * pad);
		if (!b)
			fail("malloc failed");
		double until = now_s() + HELPER_TRY_S;
		for (int i = 0; i < 2 || (!stat_of("helpers.filled_bytes") && now_s() < until); i++) {
			int c = i % 2 ? 0 : 0x5a + i % 64;
			give_helpers_a_core();
			memset(b, 0xee, pad);
			memset(b + pad + n, 0xee, pad);
			memset(b + pad, c, n);
			for (size_t k = 0; k < n; k += 4093)
				if (b[pad + k] != c)
					fail("a byte not set by a split memset");
			if (b[pad + n - 1] != c || b[pad] != c)
				fail("the ends not set by a split memset");
			for (size_t k = 0; k < pad; k++)
				if (b[k] != 0xee || b[pad + n + k] != 0xee)
					fail("a byte outside a split memset changed");
		}
		need_idle_core();
		snprintf(msg, sizeof msg, "fills %llu, their bytes %llu", (unsigned long long)stat_of("helpers.fills"),
			 (unsigned long long)stat_of("helpers.filled_bytes"));
		if (!stat_of("helpers.fills") || !stat_of("helpers.filled_bytes"))
			fail(msg);
		free(b);
		free(first);
	} else if (!strcmp(mode, "recycled")) {
		/* calloc of a recycled dirty block of 96 MiB (no zeroer:
		 * HUGEZERO_BACKGROUND=0): its clear split over the helpers,
		 * its first huge page cleared last; every byte zero. Two, and
		 * more until a helper took part (HELPER_TRY_S). */
		size_t n = 96 * MIB + 3 * PAGE;
		double until = now_s() + HELPER_TRY_S;
		for (int i = 0; i < 2 || (!stat_of("helpers.filled_bytes") && now_s() < until); i++) {
			give_helpers_a_core();
			unsigned char *p = malloc(n);
			if (!p)
				fail("malloc failed");
			memset(p, 0xa5, n);
			free(p);
			unsigned char *q = calloc(1, n);
			if (!q)
				fail("calloc failed");
			for (size_t k = 0; k < n; k += 64)
				if (q[k] || q[k + 63])
					fail("calloc of a recycled block returned a non-zero byte");
			if (q[n - 1])
				fail("calloc of a recycled block: its last byte not zero");
			free(q);
		}
		need_idle_core();
		if (!stat_of("helpers.filled_bytes"))
			fail("no recycled block's clear was split");
	} else if (!strcmp(mode, "freed")) {
		/* No zeroer (HUGEZERO_BACKGROUND=0): its clear of the freed
		 * block would fault pages in of its own. What was populated,
		 * read once free returned, must not grow: a helper's step
		 * still in flight is waited for by the free. Judged only where
		 * a helper took part, and a calloc returned with the rest of
		 * its block's steps left to it (populate.early_returns): without
		 * that, nothing runs after the free. */
		size_t n = 256 * MIB;
		double until = now_s() + HELPER_TRY_S;
		for (int i = 0; i < 8 || (!stat_of("populate.early_returns") && now_s() < until); i++) {
			give_helpers_a_core();
			unsigned char *p = calloc(1, n);
			if (!p)
				fail("calloc failed");
			free(p); /* as the helpers may still be stepping through it */
			uint64_t bytes = stat_of("populate.bytes");
			unsigned before = resident(p, n);
			sleep_ms(30);
			unsigned after = resident(p, n);
			if (after > before + 1 || stat_of("populate.bytes") != bytes) {
				snprintf(msg, sizeof msg,
					 "block %d: %u/1024 in memory at free, %u/1024 30 ms after; populated %llu, then %llu",
					 i, before, after, (unsigned long long)bytes,
					 (unsigned long long)stat_of("populate.bytes"));
				fail(msg);
			}
			malloc_trim(0); /* the next block fresh again */
		}
		if (!stat_of("populate.blocks"))
			fail("no block was populated");
		need_idle_core();
		snprintf(msg, sizeof msg,
			 "no block freed as a helper populated it: %llu bytes populated, the helpers' %llu, "
			 "%llu left to them, %llu late",
			 (unsigned long long)stat_of("populate.bytes"),
			 (unsigned long long)stat_of("helpers.populated_bytes"),
			 (unsigned long long)stat_of("populate.early_returns"),
			 (unsigned long long)stat_of("helpers.late"));
		if (!stat_of("helpers.populated_bytes") || !stat_of("populate.early_returns"))
			fail(msg);
	} else if (!strcmp(mode, "glibc")) {
		blocks(32 * MIB, argc > 2 ? atoi(argv[2]) : 6, PAGE, 0, r);
	} else {
		fail("usage: populate learn|kept|sparse|pressed|off|on|helpers|nohelpers|fill|recycled|freed|glibc [BLOCKS]");
	}
	return 0;
}
