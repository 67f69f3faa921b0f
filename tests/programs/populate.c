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
 *   freed     a block freed as its helpers may still populate it: no
 *             page of it comes into memory after the free, nothing more is
 *             counted populated
 * Exit status 77 where the kernel cannot populate (before Linux 5.14),
 * or, for the helpers' cases, where no core was ever idle.
 *   glibc     the learn pattern under any allocator: every calloc zero
 *
 * "Populated" is read from the pages (mincore) and from the library's
 * counters (hz_stat, found with dlsym: the modes but glibc need it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* No idle core for a helper all along (another process keeps the CPUs
 * busy): the case cannot be judged, exit 77. */
static void need_idle_core(const char *done)
{
	if (!stat_of(done) && stat_of("helpers.busy")) {
		printf("skip: no idle core\n");
		exit(77);
	}
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
		/* Up to 4 blocks, until a helper took steps of one (it runs
		 * only when the other core is idle). */
		size_t n = 256 * MIB;
		for (int i = 0; i < 4 && !stat_of("helpers.populated_bytes"); i++) {
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
		need_idle_core("helpers.populated_bytes");
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
		 * until a helper took part. */
		unsigned char *first = calloc(1, 256 * MIB);
		if (!first)
			fail("calloc failed");
		sleep_ms(100);
		size_t n = 192 * MIB + 12345, pad = 4096 + 77;
		unsigned char *b = malloc(n + 2 * pad);
		if (!b)
			fail("malloc failed");
		for (int i = 0; i < 8 && (i < 2 || !stat_of("helpers.filled_bytes")); i++) {
			int c = i % 2 ? 0 : 0x5a + i;
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
		need_idle_core("helpers.filled_bytes");
		snprintf(msg, sizeof msg, "fills %llu, their bytes %llu", (unsigned long long)stat_of("helpers.fills"),
			 (unsigned long long)stat_of("helpers.filled_bytes"));
		if (!stat_of("helpers.fills") || !stat_of("helpers.filled_bytes"))
			fail(msg);
		free(b);
		free(first);
	} else if (!strcmp(mode, "recycled")) {
		/* calloc of a recycled dirty block of 96 MiB (no zeroer:
		 * HUGEZERO_BACKGROUND=0): its clear split over the helpers,
		 * its first huge page cleared last; every byte zero. */
		size_t n = 96 * MIB + 3 * PAGE;
		for (int i = 0; i < 6 && (i < 2 || !stat_of("helpers.filled_bytes")); i++) {
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
		need_idle_core("helpers.filled_bytes");
		if (!stat_of("helpers.filled_bytes"))
			fail("no recycled block's clear was split");
	} else if (!strcmp(mode, "freed")) {
		/* No zeroer (HUGEZERO_BACKGROUND=0): its clear of the freed
		 * block would fault pages in of its own. What was populated,
		 * read once free returned, must not grow: a helper's step
		 * still in flight is waited for by the free. */
		size_t n = 256 * MIB;
		for (int i = 0; i < 8; i++) {
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
	} else if (!strcmp(mode, "glibc")) {
		blocks(32 * MIB, argc > 2 ? atoi(argv[2]) : 6, PAGE, 0, r);
	} else {
		fail("usage: populate learn|kept|sparse|pressed|off|on|helpers|nohelpers|fill|recycled|freed|glibc [BLOCKS]");
	}
	return 0;
}
