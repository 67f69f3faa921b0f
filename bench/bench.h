/* What the benchmarks share: a clock and the median of repeated runs. */
#ifndef HZ_BENCH_H
#define HZ_BENCH_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#endif
