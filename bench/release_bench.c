/* Release of 512 free 2 MiB blocks (1 GiB of touched transparent huge
 * pages): one madvise(MADV_DONTNEED) per block against the allocator's
 * batched release (process_madvise, hz_os_release_batch), alternated,
 * median of repeated runs. Also half blocks, which split every huge page.
 *
 * usage: release_bench [--reps N] [--csv FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../os/os.h"
#include "bench.h"

#define NBLK 512

static double run(unsigned char *p, struct hz_range *r, int batched, unsigned *syscalls)
{
	/* Fault everything back in as huge pages first (not timed). */
	memset(p, 1, (size_t)NBLK * HZ_HUGE_SIZE);
	double t0 = now_ns();
	if (batched) {
		struct hz_release_result res;
		hz_os_release_batch(r, NBLK, &res);
		*syscalls = res.syscalls;
		if (res.error || res.ranges != NBLK)
			abort();
	} else {
		for (int i = 0; i < NBLK; i++)
			if (hz_os_dontneed(r[i].p, r[i].len))
				abort();
		*syscalls = NBLK;
	}
	return now_ns() - t0;
}

int main(int argc, char **argv)
{
	int reps = 9;
	const char *csv = "release_bench.csv";
	if (bench_args(argc, argv, &reps, &csv))
		return 2;
	size_t len = (size_t)NBLK * HZ_HUGE_SIZE;
	void *m;
	hz_os_init();
	if (hz_os_map(len, HZ_HUGE_SIZE, &m) || hz_os_hugepage(m, len)) {
		fprintf(stderr, "release_bench: cannot map %zu bytes of huge pages\n", len);
		return 1;
	}
	unsigned char *p = m;
	FILE *out = fopen(csv, "w");
	if (!out) {
		perror(csv);
		return 1;
	}
	fprintf(out, "ranges,method,ms,syscalls\n");
	printf("release of %d ranges of 1 GiB of touched huge pages, median of %d alternated runs\n",
	       NBLK, reps);
	printf("%-12s %14s %10s %14s %10s %8s\n", "ranges", "madvise loop", "syscalls", "batched",
	       "syscalls", "speedup");
	static const char *const what[] = {"whole 2 MiB", "half blocks"};
	for (int half = 0; half < 2; half++) {
		struct hz_range r[NBLK];
		for (int i = 0; i < NBLK; i++)
			r[i] = (struct hz_range){p + (size_t)i * HZ_HUGE_SIZE,
						 half ? HZ_HUGE_SIZE / 2 : HZ_HUGE_SIZE};
		double tl[101], tb[101];
		unsigned sl = 0, sb = 0;
		for (int k = 0; k < reps; k++) {
			if (k & 1) {
				tb[k] = run(p, r, 1, &sb);
				tl[k] = run(p, r, 0, &sl);
			} else {
				tl[k] = run(p, r, 0, &sl);
				tb[k] = run(p, r, 1, &sb);
			}
		}
		double l = median(tl, reps) / 1e6, b = median(tb, reps) / 1e6;
		printf("%-12s %11.2f ms %10u %11.2f ms %10u %7.2fx\n", what[half], l, sl, b, sb, l / b);
		fprintf(out, "%s,madvise_loop,%.3f,%u\n%s,batched,%.3f,%u\n", what[half], l, sl,
			what[half], b, sb);
	}
	printf("batched release: %s\n", hz_os_batch_state() == 1 ? "process_madvise"
				       : "refused here, per-range madvise fallback");
	fclose(out);
	return 0;
}
