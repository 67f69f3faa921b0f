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

/* glibc's (errno.h with _GNU_SOURCE): the program's name. */
extern char *program_invocation_short_name;

/* The program's name and what went wrong, on stderr; exit status 1. */
static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", program_invocation_short_name, what);
	exit(1);
}

/* Log-uniform in [2^lo, 2^hi). */
static inline size_t log_uniform(uint64_t *rng, unsigned lo, unsigned hi)
{
	uint64_t r = xorshift(rng);
	unsigned bit = lo + (unsigned)(r % (hi - lo));
	return ((size_t)1 << bit) + (size_t)((r >> 32) & (((size_t)1 << bit) - 1));
}

/* A benchmark mode: its name and its run of OPS operations (the figure
 * it prints). */
struct bench_mode {
	const char *name;
	double (*fn)(long ops);
};

/* Runs the mode argv[1] with OPS argv[2], printing malloc_from OBJECT,
 * "MODE VALUE" and peak_rss_kib N; the exit status (2 and the usage for
 * a mode not in the n of modes). Needs <dlfcn.h> and _GNU_SOURCE. */
#define BENCH_MAIN(modes, n, argc, argv)                                                                 \
	do {                                                                                             \
		long ops_ = (argc) == 3 ? atol((argv)[2]) : 0;                                           \
		for (size_t m_ = 0; ops_ > 0 && m_ < (n); m_++) {                                       \
			if (strcmp((argv)[1], (modes)[m_].name))                                         \
				continue;                                                                \
			Dl_info di_;                                                                     \
			printf("malloc_from %s\n",                                                       \
			       dladdr((void *)malloc, &di_) && di_.dli_fname ? di_.dli_fname : "?");      \
			printf("%s %.3f\n", (modes)[m_].name, (modes)[m_].fn(ops_));                     \
			printf("peak_rss_kib %ld\n", peak_rss_kib());                                    \
			printf("minor_faults %ld\n", minor_faults());                                    \
			return 0;                                                                        \
		}                                                                                        \
		fprintf(stderr, "usage: %s", program_invocation_short_name);                             \
		for (size_t m_ = 0; m_ < (n); m_++)                                                      \
			fprintf(stderr, "%s%s", m_ ? "|" : " ", (modes)[m_].name);                        \
		fprintf(stderr, " OPS\n");                                                               \
		return 2;                                                                                \
	} while (0)

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

/* The process's minor page faults so far (its threads', joined or not). */
static inline long minor_faults(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) ? -1 : ru.ru_minflt;
}
#endif
