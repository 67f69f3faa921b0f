/* What the benchmarks share: a clock and the median of repeated runs. */
#ifndef HZ_BENCH_H
#define HZ_BENCH_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static inline double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A fast, fixed-seed random sequence (xorshift64): every allocator gets
 * the same one. */
static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Sorts v and returns its median. */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
/* Parses "[--reps N] [--csv FILE]" into *reps and *csv (their defaults on
 * entry); returns 0, or 2 after printing the usage. */
static inline int bench_args(int argc, char **argv, int *reps, const char **csv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			*reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			*csv = argv[++i];
		else
			goto usage;
	}
	if (*reps >= 1 && *reps <= 101)
		return 0;
usage:
	fprintf(stderr, "usage: %s [--reps N (1..101)] [--csv FILE]\n", argv[0]);
	return 2;
}

/* Peak RSS in KiB: this process's VmHWM (ru_maxrss would include what the
 * process that exec'd us had, for a launcher like env). */
static inline long peak_rss_kib(void)
{
	long kib = -1;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	if (f) {
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "VmHWM: %ld", &kib) == 1)
				break;
		fclose(f);
	}
	if (kib < 0) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		kib = ru.ru_maxrss;
	}
	return kib;
}
#endif
