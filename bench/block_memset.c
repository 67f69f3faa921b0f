/* memset of a block malloc handed out, as a program memsets its own
 * buffer: glibc's memset against the one hugezero exports, which from
 * HZ_HELPERS_MIN splits a fill of an arena block over the helpers on idle
 * cores, with the kernel its split fills have learnt (arch/learn.c).
 * memset_bench's buffer is not the arenas', so it sees only fills alone.
 * Per size, the fills are first left to learn (their times in the CSV
 * only), then the two memsets are timed in turn, in alternated order,
 * the same block each time (warm, as a program that reuses it); the
 * table gives median GB/s.
 *
 * usage: block_memset [--reps N] [--csv FILE]
 * (HUGEZERO_KERNEL=name fixes the kernel, HUGEZERO_THREADS=1 runs no
 * helper: the fixed alternatives to what is learnt.)
 *
 * Linked with libhugezero.so, as memset_bench is: "glibc" is libc.so.6's
 * own memset, looked up in libc itself. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

typedef void *(*fill_fn)(void *, int, size_t);
static fill_fn volatile glibc_memset, hz_memset;

/* Seconds per fill of n bytes at p: two fills first (what the other
 * memset left in cache is not measured), then enough to write 256 MiB. */
static double time_fill(fill_fn fn, unsigned char *p, size_t n)
{
	size_t calls = ((size_t)256 << 20) / n;
	calls = calls ? calls : 1;
	fn(p, 0x5a, n);
	fn(p, 0x5a, n);
	double t0 = now_ns();
	for (size_t i = 0; i < calls; i++)
		fn(p, 0x5a, n);
	return (now_ns() - t0) / 1e9 / (double)calls;
}

int main(int argc, char **argv)
{
	int reps = 7;
	const char *csv = "block_memset.csv";
	if (bench_args(argc, argv, &reps, &csv))
		return 2;
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	glibc_memset = libc ? (fill_fn)dlsym(libc, "memset") : NULL;
	hz_memset = (fill_fn)dlsym(RTLD_DEFAULT, "memset");
	if (!glibc_memset || !hz_memset || glibc_memset == hz_memset || !dlsym(RTLD_DEFAULT, "hz_stat")) {
		fprintf(stderr, "block_memset: glibc's and hugezero's memset not both found\n");
		return 1;
	}
	FILE *out = fopen(csv, "w");
	if (!out) {
		perror(csv);
		return 1;
	}
	/* Rows "size,glibc_gbps,hugezero_gbps"; before each size's, one
	 * "size,learning,ms..." with the untimed fills' times. */
	fprintf(out, "size,glibc_gbps,hugezero_gbps\n");
	printf("memset of a malloc'd block, GB/s, median of %d alternated runs\n", reps);
	printf("%8s %10s %10s %10s\n", "size", "glibc", "hugezero", "hz/glibc");
	for (size_t mib = 4; mib <= 256; mib *= 2) {
		size_t n = mib << 20;
		unsigned char *p = malloc(n);
		if (!p)
			die("malloc");
		/* Every kernel tried, alone and split; these fills' times go to
		 * the CSV as they came (a cached kernel's first fills of a size
		 * the cache can hold, and each first fill after a switch, find
		 * the cache cold). */
		fprintf(out, "%zu,learning", n);
		for (int i = 0; i < 24; i++) {
			double t0 = now_ns();
			hz_memset(p, 0x5a, n);
			fprintf(out, ",%.3f", (now_ns() - t0) / 1e6);
		}
		fprintf(out, "\n");
		double tg[101], th[101];
		for (int r = 0; r < reps; r++) {
			if (r & 1) {
				th[r] = time_fill(hz_memset, p, n);
				tg[r] = time_fill(glibc_memset, p, n);
			} else {
				tg[r] = time_fill(glibc_memset, p, n);
				th[r] = time_fill(hz_memset, p, n);
			}
		}
		double g = (double)n / median(tg, reps) / 1e9, h = (double)n / median(th, reps) / 1e9;
		printf("%7zuM %10.1f %10.1f %10.2f\n", mib, g, h, h / g);
		fprintf(out, "%zu,%.3f,%.3f\n", n, g, h);
		fflush(stdout);
		free(p);
	}
	fclose(out);
	return 0;
}
