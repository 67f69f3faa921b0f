#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fillcheck.h"
#include "guard.h"

#define MAXN 4096
#define MAXOFF 64
#define SENT 64

int all_bytes(const unsigned char *p, size_t n, unsigned char c, size_t *bad_at)
{
	/* All n bytes equal p[0] exactly when p[0..n-2] equals p[1..n-1]. */
	if (n == 0 || (p[0] == c && memcmp(p, p + 1, n - 1) == 0))
		return 1;
	for (size_t i = 0; i < n; i++)
		if (p[i] != c) {
			*bad_at = i;
			return 0;
		}
	return 1;
}

/* Fills p's window with sentinels, runs f, checks target and window. */
static int one(fill_fn f, struct guarded *g, unsigned char *p, size_t n, int c,
	       char *err, size_t errlen, const char *where, size_t off)
{
	unsigned char s = (unsigned char)(c ^ 0xA5);
	unsigned char *lo = p - SENT < g->base ? g->base : p - SENT;
	unsigned char *hi = p + n + SENT > g->base + g->len ? g->base + g->len : p + n + SENT;
	memset(lo, s, (size_t)(hi - lo)); /* the C library's, as the reference */
	void *r = f(p, c, n);
	size_t bad;
	if (r != p) {
		snprintf(err, errlen, "%s n=%zu off=%zu c=%#x: returned %p, not %p", where, n,
			 off, c, r, (void *)p);
		return -1;
	}
	if (!all_bytes(p, n, (unsigned char)c, &bad)) {
		snprintf(err, errlen, "%s n=%zu off=%zu c=%#x: byte %zu is %#x", where, n, off,
			 c, bad, p[bad]);
		return -1;
	}
	if (!all_bytes(lo, (size_t)(p - lo), s, &bad) ||
	    !all_bytes(p + n, (size_t)(hi - (p + n)), s, &bad)) {
		snprintf(err, errlen, "%s n=%zu off=%zu c=%#x: sentinel overwritten", where, n,
			 off, c);
		return -1;
	}
	return 0;
}

int check_sizes(fill_fn f, size_t lo, size_t hi, char *err, size_t errlen)
{
	static const int fills[] = {0, 0xFF, 0x5A};
	struct guarded g;
	if (guarded_alloc(&g, hi + MAXOFF + 2 * SENT)) {
		snprintf(err, errlen, "mmap failed");
		return -1;
	}
	int rc = 0;
	for (size_t fi = 0; fi < 3 && !rc; fi++)
		for (size_t n = lo; n <= hi && !rc; n++)
			for (size_t off = 0; off < MAXOFF && !rc; off++) {
				int c = fills[fi];
				rc = one(f, &g, g.base + off, n, c, err, errlen, "start", off);
				if (!rc)
					rc = one(f, &g, g.base + g.len - n - off, n, c, err,
						 errlen, "end", off);
			}
	guarded_free(&g);
	return rc;
}

int check_exhaustive(fill_fn f, char *err, size_t errlen)
{
	return check_sizes(f, 0, MAXN, err, errlen);
}

int check_random(fill_fn f, unsigned iters, size_t max_size, unsigned seed, char *err,
		 size_t errlen)
{
	struct guarded g;
	if (guarded_alloc(&g, max_size + MAXOFF + 2 * SENT)) {
		snprintf(err, errlen, "mmap failed");
		return -1;
	}
	srand(seed);
	int rc = 0;
	for (unsigned i = 0; i < iters && !rc; i++) {
		size_t n = ((size_t)rand() * RAND_MAX + (size_t)rand()) % (max_size + 1);
		size_t off = (size_t)rand() % MAXOFF;
		int c = i % 3 == 0 ? 0 : rand() & 0xFF;
		unsigned char *p = i & 1 ? g.base + g.len - n - off : g.base + off + SENT;
		rc = one(f, &g, p, n, c, err, errlen, "random", off);
	}
	guarded_free(&g);
	return rc;
}
