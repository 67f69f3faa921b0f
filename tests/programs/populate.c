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
 *   off       HUGEZERO_POPULATE=0: no block populated
 *   on        HUGEZERO_POPULATE=1: the first block populated already
 *   helpers   a 256 MiB block populated with helpers (HUGEZERO_THREADS=2):
 *             a helper started, the block in memory and zero
 *   freed     a block freed as its helpers may still populate it: no
 *             page of it comes into memory after the free
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
	if (!v || mincore((void *)lo, hi - lo, v))
		fail("mincore failed");
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

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	stat_fn = (int (*)(const char *, uint64_t *))dlsym(RTLD_DEFAULT, "hz_stat");
	unsigned r[6];
	char msg[160];
	if (!strcmp(mode, "learn") || !strcmp(mode, "kept")) {
		blocks(32 * MIB, 6, PAGE, mode[0] == 'k', r);
		/* The first: all the program's to fault; the last ones
		 * populated, but for their sentinel and watched steps. */
		snprintf(msg, sizeof msg, "residency after calloc, in 1/1024: %u %u %u %u %u %u", r[0], r[1], r[2], r[3],
			 r[4], r[5]);
		if (r[0] > 128 || r[4] < 768 || r[5] < 768 || stat_of("populate.blocks") < 3)
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
	} else if (!strcmp(mode, "off")) {
		blocks(32 * MIB, 4, PAGE, 0, r);
		if (stat_of("populate.blocks") || r[3] > 128)
			fail("populated with HUGEZERO_POPULATE=0");
	} else if (!strcmp(mode, "on")) {
		blocks(32 * MIB, 1, PAGE, 0, r);
		snprintf(msg, sizeof msg, "first block's residency %u/1024, populate.blocks %llu", r[0],
			 (unsigned long long)stat_of("populate.blocks"));
		if (r[0] < 768 || stat_of("populate.blocks") != 1)
			fail(msg);
	} else if (!strcmp(mode, "helpers")) {
		size_t n = 256 * MIB;
		unsigned char *p = calloc(1, n);
		if (!p)
			fail("calloc failed");
		unsigned in = resident(p, n);
		all_zero(p, n, PAGE);
		snprintf(msg, sizeof msg, "residency %u/1024, helper starts %llu", in,
			 (unsigned long long)stat_of("populate.helper_starts"));
		if (in < 768 || stat_of("populate.helper_starts") < 1 || stat_of("populate.threads") != 2)
			fail(msg);
		free(p);
	} else if (!strcmp(mode, "freed")) {
		/* No zeroer (HUGEZERO_BACKGROUND=0): its clear of the freed
		 * block would fault pages in of its own. */
		size_t n = 256 * MIB;
		for (int i = 0; i < 8; i++) {
			unsigned char *p = calloc(1, n);
			if (!p)
				fail("calloc failed");
			free(p); /* as the helpers may still be stepping through it */
			unsigned before = resident(p, n);
			sleep_ms(30);
			unsigned after = resident(p, n);
			if (after > before + 1) {
				snprintf(msg, sizeof msg, "block %d: %u/1024 in memory at free, %u/1024 30 ms after", i,
					 before, after);
				fail(msg);
			}
			malloc_trim(0); /* the next block fresh again */
		}
		if (stat_of("populate.blocks") < 8)
			fail("not every block was populated");
	} else if (!strcmp(mode, "glibc")) {
		blocks(32 * MIB, 6, PAGE, 0, r);
	} else {
		fail("usage: populate learn|kept|sparse|off|on|helpers|freed|glibc");
	}
	return 0;
}
