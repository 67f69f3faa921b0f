/* jemalloc's extended API on pointers from malloc, as programs built for
 * jemalloc call it (Debian's redis-server: malloc_usable_size, nallocx).
 * Linked with Debian's libjemalloc: without hugezero every check holds for
 * jemalloc itself; with libhugezero.so preloaded the same calls reach
 * hugezero, whoever owns the pointer (small blocks: its embedded jemalloc;
 * from 1 MiB: its hugepage arenas). Prints failures and "N passed, N
 * failed". */
#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"

static const size_t sizes[] = {1, 100, 4096, 70000, 1000000, (1 << 20) + 1, 5 << 20, 40 << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

int main(void)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		/* From malloc, asked of the extended API. */
		unsigned char *p = malloc(n);
		CHECK(p != NULL, "malloc(%zu)", n);
		size_t u = malloc_usable_size(p);
		CHECK(u >= n && sallocx(p, 0) == u, "%zu: usable %zu, sallocx %zu", n, u, sallocx(p, 0));
		CHECK(nallocx(n, 0) == u, "%zu: nallocx %zu, usable %zu", n, nallocx(n, 0), u);
		memset(p, 0xA5, u);
		/* Grown by rallocx with zeroing: the old bytes kept, the new zero. */
		unsigned char *q = rallocx(p, 2 * n + 4096, MALLOCX_ZERO);
		CHECK(q && all(q, n, 0xA5), "%zu: rallocx kept the bytes", n);
		size_t qu = sallocx(q, 0);
		CHECK(qu >= 2 * n + 4096 && all(q + u, 2 * n + 4096 - u, 0), "%zu: rallocx zeroed the rest", n);
		/* In place only: never moves, reports the size it has. */
		size_t x = xallocx(q, n, 0, 0);
		CHECK(x >= n && sallocx(q, 0) == x && all(q, n, 0xA5), "%zu: xallocx shrink gave %zu", n, x);
		size_t x2 = xallocx(q, x + 1, 1 << 20, 0);
		/* (jemalloc 5.3 may report less than sallocx then gives.) */
		CHECK(x2 >= x && sallocx(q, 0) >= x2 && all(q, n, 0xA5), "%zu: xallocx grow gave %zu, sallocx %zu",
		      n, x2, sallocx(q, 0));
		sdallocx(q, x2, 0);

		/* Grown in place with MALLOCX_ZERO: what it grew into reads zero. */
		unsigned char *g = mallocx(n, 0);
		CHECK(g != NULL, "%zu: mallocx", n);
		size_t gu = sallocx(g, 0);
		memset(g, 0x3C, gu);
		size_t gx = xallocx(g, gu + 4096, 1 << 20, MALLOCX_ZERO);
		CHECK(gx >= gu && all(g, gu, 0x3C) && all(g + gu, gx - gu, 0),
		      "%zu: xallocx with MALLOCX_ZERO grew %zu to %zu", n, gu, gx);
		dallocx(g, 0);

		/* From mallocx: zeroed, aligned, freed by free and dallocx. */
		unsigned char *z = mallocx(n, MALLOCX_ZERO);
		CHECK(z && all(z, n, 0), "%zu: mallocx zero", n);
		memset(z, 0x5A, n);
		dallocx(z, 0);
		z = mallocx(n, MALLOCX_ZERO); /* maybe the same block, dirty */
		CHECK(z && all(z, n, 0), "%zu: mallocx zero after a dirty free", n);
		free(z);
		for (int lg = 4; lg <= 22; lg += 6) {
			void *a = mallocx(n, MALLOCX_LG_ALIGN(lg));
			CHECK(a && !((uintptr_t)a & (((size_t)1 << lg) - 1)) && sallocx(a, 0) >= n,
			      "%zu: mallocx aligned 2^%d", n, lg);
			CHECK(nallocx(n, MALLOCX_LG_ALIGN(lg)) == sallocx(a, 0),
			      "%zu: nallocx aligned 2^%d: %zu, sallocx %zu", n, lg,
			      nallocx(n, MALLOCX_LG_ALIGN(lg)), sallocx(a, 0));
			free(a);
		}
		/* calloc's block through rallocx to a small size and back. */
		unsigned char *c = calloc(1, n);
		CHECK(c && all(c, n, 0), "%zu: calloc", n);
		c = rallocx(c, 10, 0);
		CHECK(c && sallocx(c, 0) >= 10, "%zu: rallocx to 10 bytes", n);
		dallocx(c, 0);
	}
	/* The statistics interface answers. */
	uint64_t epoch = 1;
	size_t sz = sizeof epoch, allocated = 0;
	CHECK(mallctl("epoch", &epoch, &sz, &epoch, sz) == 0, "mallctl epoch");
	sz = sizeof allocated;
	CHECK(mallctl("stats.allocated", &allocated, &sz, NULL, 0) == 0 && allocated > 0,
	      "mallctl stats.allocated: %zu", allocated);
	return report();
}
