/* calloc + touch + free in a loop, and fresh calloc + touch, at 256 KiB,
 * 4 MiB, 32 MiB and 256 MiB: glibc's calloc against hugezero's large-block
 * path (allocator/large.c, called directly, as calloc does from 1 MiB up),
 * side by side in one process, alternated,
 * medians. "Touch" writes one byte in every 4 KiB page, as a program that
 * uses the memory does. Last, the policy question for a dirty recycled
 * block: clear it in place (hinted clear) or release it (MADV_DONTNEED)
 * and let the kernel fault zero pages back in. And hugezero's recycled
 * calloc + touch + free against one clear pass of the same size.
 *
 * usage: calloc_bench [--reps N] [--csv FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../allocator/allocator.h"
#include "../obs/obs.h"
#include "../preload/preload.h"
#include "bench.h"

static void touch(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
}

/* ms for one calloc + touch + free (loop: warmed by one untimed round). */
static double one(int hz, size_t n, int fresh)
{
	unsigned char *p;
	double t0 = now_ns();
	p = hz ? hz_large_alloc(n, 1) : calloc(1, n);
	if (!p)
		abort();
	touch(p, n);
	if (!fresh) {
		if (hz)
			hz_large_free(hz_large_owner(p), p);
		else
			free(p);
	}
	return (now_ns() - t0) / 1e6;
}

int main(int argc, char **argv)
{
	int reps = 7;
	const char *csv = "calloc_bench.csv";
	if (bench_args(argc, argv, &reps, &csv))
		return 2;
	hz_options_setup(); /* the arenas as the library starts them */
	hz_options_start_engine(1); /* kernels learnt from 4 MiB, as the preloaded library's */
	FILE *out = fopen(csv, "w");
	if (!out) {
		perror(csv);
		return 1;
	}
	/* Each table's two columns as it prints them: glibc and hugezero;
	 * refault and clear; recycled calloc and one clear. */
	fprintf(out, "case,size,first_ms,second_ms\n");
	printf("ms per calloc+touch(+free), median of %d alternated runs\n", reps);
	printf("%-22s %10s %12s %12s %10s\n", "case", "size", "glibc", "hugezero", "speedup");
	static const size_t sizes[] = {256 << 10, 4 << 20, 32 << 20, (size_t)256 << 20};
	for (int fresh = 0; fresh < 2; fresh++)
		for (int s = 0; s < 4; s++) {
			size_t n = sizes[s];
			if (fresh && n != ((size_t)32 << 20))
				continue;
			double tg[101], th[101];
			if (!fresh) {
				one(0, n, 0);
				one(1, n, 0);
			}
			for (int r = 0; r < reps; r++) {
				int first = r & 1;
				double a = one(first, n, fresh), b = one(!first, n, fresh);
				th[r] = first ? a : b;
				tg[r] = first ? b : a;
			}
			double g = median(tg, reps), h = median(th, reps);
			const char *what = fresh ? "fresh calloc+touch" : "calloc+touch+free loop";
			printf("%-22s %9zuK %9.3f ms %9.3f ms %9.1fx\n", what, n >> 10, g, h, g / h);
			fprintf(out, "%s,%zu,%.4f,%.4f\n", what, n, g, h);
		}

	/* Clear in place or release and refault, for a dirty huge-page-backed
	 * block that calloc reuses. */
	printf("\n%-22s %10s %12s %12s %10s\n", "dirty block for calloc", "size", "refault",
	       "clear", "speedup");
	for (int s = 1; s < 4; s++) {
		size_t n = sizes[s];
		void *m;
		if (hz_os_map(n, HZ_HUGE_SIZE, &m))
			abort();
		unsigned char *p = m;
		hz_os_hugepage(p, n);
		double tr[101], tc[101];
		for (int r = 0; r < reps; r++) {
			memset(p, 0x5A, n);
			double t0 = now_ns();
			hz_os_dontneed(p, n);
			touch(p, n);
			tr[r] = (now_ns() - t0) / 1e6;
			memset(p, 0x5A, n);
			t0 = now_ns();
			hz_zero_hinted_counted(p, n, p);
			touch(p, n);
			tc[r] = (now_ns() - t0) / 1e6;
		}
		double a = median(tr, reps), b = median(tc, reps);
		printf("%-22s %9zuK %9.3f ms %9.3f ms %9.1fx\n", "release+refault vs clear", n >> 10,
		       a, b, a / b);
		fprintf(out, "dirty refault vs clear,%zu,%.4f,%.4f\n", n, a, b);
		hz_os_unmap(p, n);
	}
	/* Recycled calloc against one clear pass: hugezero's calloc + touch +
	 * free of a block freed dirty (cleared on the caller's thread: no
	 * zeroer in this process), against the clear alone of a block of the
	 * same size in memory, alternated. Past the cache, the touch after
	 * the clear reads lines the clear wrote out. */
	printf("\n%-22s %10s %12s %12s %10s\n", "recycled calloc", "size", "calloc", "one clear", "ratio");
	for (int s = 1; s < 4; s++) {
		size_t n = sizes[s];
		/* The earlier tables' free blocks go back first: with them,
		 * a 256 MiB block freed is past the dirty budget and released
		 * (allocator/budget.c), and the loop would measure a fresh
		 * block's population, not a recycled one. */
		hz_large_trim();
		unsigned char *q = hz_large_alloc(n, 0);
		if (!q)
			abort();
		memset(q, 0x5A, n);
		hz_large_free(hz_large_owner(q), q);
		q = hz_large_alloc(n, 0); /* the same block, dirty and in memory */
		unsigned char *b = hz_large_alloc(n, 1);
		if (!q || !b)
			abort();
		touch(b, n);
		hz_large_free(hz_large_owner(b), b); /* freed dirty: the loop's block */
		double tl[101], tc[101];
		/* Untimed rounds first: each size class tries every kernel
		 * before it settles on the cheapest (arch/learn.c). */
		for (int r = -12; r < reps; r++) {
			double t0 = now_ns();
			b = hz_large_alloc(n, 1);
			if (!b)
				abort();
			touch(b, n);
			hz_large_free(hz_large_owner(b), b);
			if (r >= 0)
				tl[r] = (now_ns() - t0) / 1e6;
			t0 = now_ns();
			hz_zero_hinted_counted(q, n, q);
			if (r >= 0)
				tc[r] = (now_ns() - t0) / 1e6;
		}
		double a = median(tl, reps), c = median(tc, reps);
		printf("%-22s %9zuK %9.3f ms %9.3f ms %9.2fx\n", "calloc+touch+free", n >> 10, a, c, a / c);
		fprintf(out, "recycled calloc vs one clear,%zu,%.4f,%.4f\n", n, a, c);
		hz_large_free(hz_large_owner(q), q);
	}
	fclose(out);
	return 0;
}
