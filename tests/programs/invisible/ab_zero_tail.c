/* invisible-env: HUGEZERO_AB=1 HUGEZERO_BACKGROUND=0 */
/* A calloc'ed block reads zero up to its malloc_usable_size, whichever
 * A/B arm made it (issue 37, case 7). Arm A (glibc's way, every call
 * under HUGEZERO_AB=1) once cleared only the requested bytes, leaving
 * the tail of a recycled block as its last owner wrote it; jemalloc's
 * contract, and a later rallocx or xallocx with MALLOCX_ZERO, rely on
 * the whole usable size. No background clearing, so the recycled memory
 * stays dirty until the calloc. Sizes are not multiples of a page, each
 * dirtied first by malloc, memset and free of the same size. Where the
 * jemalloc API is there (under the library), mallocx with MALLOCX_ZERO
 * is checked the same way. Exits 0 when every byte was zero. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MALLOCX_ZERO 0x40

static const size_t sizes[] = {
	(1u << 20) + 1, (1u << 20) + 4095, (2u << 20) + 77, (3u << 20) + 2049,
	(5u << 20) + 1000, (8u << 20) + 123,
};
#define N (sizeof sizes / sizeof sizes[0])

static void *(*mallocx)(size_t, int);
static void (*dallocx)(void *, int);

/* The first non-zero byte of p's n bytes, or n. */
static size_t first_nonzero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return i;
	return n;
}

/* Every size malloc'ed, written whole (to its usable size) and freed, so
 * that the next blocks of these sizes are recycled and dirty. */
static int dirty(int byte)
{
	void *p[N];
	for (size_t i = 0; i < N; i++) {
		p[i] = malloc(sizes[i]);
		if (!p[i]) {
			fprintf(stderr, "ab_zero_tail: malloc(%zu) failed\n", sizes[i]);
			return 1;
		}
		memset(p[i], byte, malloc_usable_size(p[i]));
	}
	for (size_t i = 0; i < N; i++)
		free(p[i]);
	return 0;
}

static int check(const char *how, size_t size, unsigned char *p)
{
	if (!p) {
		fprintf(stderr, "ab_zero_tail: %s(%zu) failed\n", how, size);
		return 1;
	}
	size_t usable = malloc_usable_size(p);
	size_t at = first_nonzero(p, usable);
	if (at < usable) {
		fprintf(stderr,
			"ab_zero_tail: %s(%zu): byte %zu of %zu usable is 0x%02x (%s the requested size)\n",
			how, size, at, usable, p[at], at < size ? "within" : "past");
		return 1;
	}
	return 0;
}

int main(void)
{
	mallocx = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "mallocx");
	dallocx = (void (*)(void *, int))dlsym(RTLD_DEFAULT, "dallocx");
	int bad = 0;
	for (int round = 0; round < 4 && !bad; round++) {
		if (dirty(0xA5 + round))
			return 1;
		/* Small to large, then large to small: other blocks recycled. */
		for (size_t k = 0; k < N && !bad; k++) {
			size_t i = round & 1 ? N - 1 - k : k;
			unsigned char *p = calloc(1, sizes[i]);
			bad |= check("calloc", sizes[i], p);
			free(p);
		}
		if (bad || !mallocx || !dallocx)
			continue;
		if (dirty(0x5A + round))
			return 1;
		for (size_t k = 0; k < N && !bad; k++) {
			unsigned char *p = mallocx(sizes[k], MALLOCX_ZERO);
			bad |= check("mallocx(MALLOCX_ZERO)", sizes[k], p);
			if (p)
				dallocx(p, 0);
		}
	}
	if (bad)
		return 1;
	printf("ab_zero_tail: every calloc'ed byte up to the usable size reads zero%s\n",
	       mallocx ? " (and mallocx's with MALLOCX_ZERO)" : "");
	return 0;
}
