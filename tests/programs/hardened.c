/* HUGEZERO_HARDENED=1 as a program sees it (hardened.sh runs it preloaded):
 *   zero      every block's bytes read zero once free returns, through the
 *             stale pointer (small, jemalloc-large, chunk and huge sizes);
 *             exit 1 where any byte is not (so under the default mode the
 *             check is seen to fail)
 *   moved     a loop of calloc, write, free of 8 MiB: the clearing done at
 *             free, none at calloc (hugezero's counters), every byte zero
 *   sparse    a fresh 40 MiB block of which three 2 MiB steps were
 *             written (its last two not), freed: every byte zero, and (no swap configured)
 *             those three steps cleared, the 34 MiB never in memory left
 *             as they were; with swap, all 40 cleared
 *   guard N   a write one byte past the usable size of a block of N MiB
 *             and 100 bytes (SIGSEGV expected), that size checked
 *   resize    realloc and the usable size of small blocks keep the bytes;
 *             sizes near SIZE_MAX refused with ENOMEM
 * Usage: hardened MODE [N] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>

#define MIB ((size_t)1 << 20)

static uint64_t stat_of(const char *name)
{
	int (*stat)(const char *, uint64_t *) = (int (*)(const char *, uint64_t *))dlsym(RTLD_DEFAULT, "hz_stat");
	uint64_t v = 0;
	if (!stat || stat(name, &v)) {
		fprintf(stderr, "no counter %s\n", name);
		exit(2);
	}
	return v;
}

static int zero(void)
{
	static const size_t sizes[] = {24, 200, 4000, 70000, 2 * MIB + 100, 40 * MIB};
	int bad = 0;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t n = sizes[i], nz = 0;
		unsigned char *p = malloc(n);
		if (!p)
			return 2;
		memset(p, 0xAA, n);
		free(p);
		for (size_t k = 0; k < n; k++) /* the freed block, still mapped */
			nz += ((volatile unsigned char *)p)[k] != 0;
		if (nz) {
			printf("%zu bytes: %zu non-zero after free\n", n, nz);
			bad = 1;
		}
	}
	return bad;
}

static int moved(void)
{
	enum { ROUNDS = 20 };
	const size_t n = 8 * MIB;
	uint64_t cleared0 = stat_of("hardened.cleared_large_bytes"),
		 known0 = stat_of("calloc.large.known_zero_bytes");
	for (int r = 0; r < ROUNDS; r++) {
		unsigned char *p = calloc(1, n);
		if (!p)
			return 2;
		for (size_t k = 0; k < n; k++)
			if (p[k]) {
				printf("round %d: calloc byte %zu is %u\n", r, k, p[k]);
				return 1;
			}
		memset(p, 0x5A, n);
		free(p);
	}
	uint64_t cleared = stat_of("hardened.cleared_large_bytes") - cleared0,
		 known = stat_of("calloc.large.known_zero_bytes") - known0;
	/* Every free cleared its block; every calloc but the first found a
	 * freed block known zero and cleared nothing. */
	if (cleared < ROUNDS * n || known < (ROUNDS - 1) * n) {
		printf("cleared at free %llu MiB, known zero at calloc %llu MiB: expected %zu and %zu\n",
		       (unsigned long long)(cleared >> 20), (unsigned long long)(known >> 20), ROUNDS * n >> 20,
		       (ROUNDS - 1) * n >> 20);
		return 1;
	}
	return 0;
}

static int sparse(void)
{
	const size_t n = 40 * MIB, step = 2 * MIB;
	static unsigned char in_memory[40 * MIB / 4096];
	struct sysinfo si;
	int swap = sysinfo(&si) || si.totalswap;
	uint64_t cleared0 = stat_of("hardened.cleared_large_bytes"), left0 = stat_of("hardened.not_resident_bytes");
	unsigned char *p = malloc(n);
	if (!p || (uintptr_t)p % step || mincore(p, n, in_memory))
		return 2;
	for (size_t k = 0; k < sizeof in_memory; k++)
		if (in_memory[k] & 1) {
			printf("the fresh block has page %zu in memory already\n", k);
			return 2;
		}
	p[0] = 1; /* steps 0, 7 and 17; the last two left */
	p[7 * step + 5] = 1;
	p[18 * step - 1] = 1;
	free(p);
	size_t nz = 0;
	for (size_t k = 0; k < n; k++) /* the freed block, still mapped */
		nz += ((volatile unsigned char *)p)[k] != 0;
	uint64_t cleared = stat_of("hardened.cleared_large_bytes") - cleared0,
		 left = stat_of("hardened.not_resident_bytes") - left0, want = swap ? n : 3 * step;
	if (nz || cleared != want || left != n - want) {
		printf("%zu bytes non-zero after free; cleared %llu KiB, left %llu KiB: expected %llu and %llu (swap %s)\n",
		       nz, (unsigned long long)(cleared >> 10), (unsigned long long)(left >> 10),
		       (unsigned long long)(want >> 10), (unsigned long long)((n - want) >> 10), swap ? "on" : "off");
		return 1;
	}
	return 0;
}

static int guard(size_t mib)
{
	size_t n = mib * MIB + 100, u; /* not whole pages */
	char *p = malloc(n);
	if (!p)
		return 2;
	/* Rounded up to whole pages, or from a huge page up to whole huge
	 * pages: never by more. */
	u = malloc_usable_size(p);
	if (u < n || u - n >= (n >= 2 * MIB ? 2 * MIB : 4096)) {
		printf("usable size %zu for %zu bytes\n", u, n);
		return 1;
	}
	/* nallocx (jemalloc's API, hugezero's) tells the same size. */
	size_t (*nalloc)(size_t, int) = (size_t (*)(size_t, int))dlsym(RTLD_DEFAULT, "nallocx");
	if (nalloc && nalloc(n, 0) != u) {
		printf("nallocx says %zu for %zu bytes, the block has %zu\n", nalloc(n, 0), n, u);
		return 1;
	}
	/* Hardened, from 2 MiB: whole huge pages, huge-page aligned. */
	const char *h = getenv("HUGEZERO_HARDENED");
	if (h && !strcmp(h, "1") && n >= 2 * MIB && (((uintptr_t)p | u) & (2 * MIB - 1))) {
		printf("a %zu-byte block at %p, %zu usable: not whole huge pages\n", n, (void *)p, u);
		return 1;
	}
	memset(p, 1, u);
	((volatile char *)p)[u] = 1; /* the byte after the block */
	printf("wrote past a %zu MiB block\n", mib);
	return 0;
}

static int resize(void)
{
	char *p = malloc(10);
	memcpy(p, "012345678", 10);
	if (malloc_usable_size(p) < 10)
		return 1;
	for (size_t n = 11; n < 5000; n = n * 3 / 2) {
		p = realloc(p, n);
		if (!p || memcmp(p, "012345678", 10) || malloc_usable_size(p) < n) {
			printf("realloc to %zu lost the bytes\n", n);
			return 1;
		}
		memset(p + 10, 'x', n - 10);
	}
	p = realloc(p, 12);
	if (!p || memcmp(p, "012345678", 10))
		return 1;
	/* Sizes nobody can serve, near SIZE_MAX (the tag's 16 bytes on top
	 * must not wrap): NULL and ENOMEM, the block kept. */
	volatile size_t top = SIZE_MAX; /* unseen by the compiler's size checks */
	errno = 0;
	if (malloc(top - 8) || errno != ENOMEM || calloc(top / 2, 3) || realloc(p, top - 4) ||
	    errno != ENOMEM || memcmp(p, "012345678", 10)) {
		printf("a size near SIZE_MAX was not refused with ENOMEM\n");
		return 1;
	}
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "zero"))
		return zero();
	if (!strcmp(m, "moved"))
		return moved();
	if (!strcmp(m, "sparse"))
		return sparse();
	if (!strcmp(m, "guard") && argc > 2)
		return guard(strtoull(argv[2], NULL, 0));
	if (!strcmp(m, "resize"))
		return resize();
	fprintf(stderr, "usage: %s zero | moved | sparse | guard MIB | resize\n", argv[0]);
	return 2;
}
