/* A request loop with idle time between requests, the case a background
 * zeroer is for: each request is a calloc of SIZE bytes and a write to
 * every page of it (the program's first touch), timed; then the block is
 * freed (recycled memory), kept (every request fresh memory), or freed
 * and given back with malloc_trim (fresh memory, freed: the process does
 * not grow), then the program sleeps GAP_MS milliseconds.
 *
 *   idle_bench SIZE free|keep|trim GAP_MS [REQUESTS]
 *
 * Output, one "key value" line each: malloc_from OBJECT, median_us and
 * p99_us of calloc + touch, cpu_s (the process's user and system time,
 * every thread's), peak_rss_kib; "idle VALUE" is the median again, for the
 * suite. Every block is checked to read as zero, sampled, after it was
 * timed: a calloc that returned a non-zero byte fails the run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

#define PAGE 4096

static size_t parse_size(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 10);
	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end == 'G')
		v <<= 30;
	return v;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (ms && nanosleep(&t, &t))
		;
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[2], "free") && strcmp(argv[2], "keep") && strcmp(argv[2], "trim"))) {
		fprintf(stderr, "usage: idle_bench SIZE free|keep|trim GAP_MS [REQUESTS]\n");
		return 2;
	}
	size_t size = parse_size(argv[1]);
	int keep = !strcmp(argv[2], "keep"), trim = !strcmp(argv[2], "trim");
	unsigned gap = (unsigned)atoi(argv[3]);
	int n = argc > 4 ? atoi(argv[4]) : 50;
	if (!size || n < 2 || n > 100000)
		return 2;
	double *lat = malloc(sizeof *lat * (size_t)n);
	unsigned char **kept = calloc((size_t)n, sizeof *kept);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	/* Recycled memory: one request first, untimed, whose block the
	 * first timed request may find again. */
	if (!keep && !trim) {
		unsigned char *p = calloc(size, 1);
		for (size_t i = 0; p && i < size; i += PAGE)
			p[i] = 1;
		free(p);
		sleep_ms(gap);
	}
	for (int r = 0; r < n; r++) {
		double t0 = now_ns();
		unsigned char *p = calloc(size, 1);
		if (!p) {
			fprintf(stderr, "idle_bench: calloc failed\n");
			return 1;
		}
		/* The first touch reads the page too (a write of the bytes it
		 * read, plus one): the checks below see every page. */
		for (size_t i = 0; i < size; i += PAGE)
			p[i] = (unsigned char)(p[i] + 1);
		lat[r] = now_ns() - t0;
		for (int k = 0; k < 64; k++) {
			size_t at = (size_t)(xorshift(&seed) % size);
			unsigned char want = at % PAGE ? 0 : 1;
			if (p[at] != want) {
				fprintf(stderr, "idle_bench: byte %zu of a calloc'd block is %u\n", at, p[at]);
				return 1;
			}
		}
		for (size_t i = 0; i < size; i += PAGE)
			if (p[i] != 1) {
				fprintf(stderr, "idle_bench: byte %zu of a calloc'd block was %u\n", i, p[i] - 1);
				return 1;
			}
		if (keep)
			kept[r] = p;
		else
			free(p);
		if (trim)
			malloc_trim(0);
		sleep_ms(gap);
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		     ru.ru_stime.tv_usec / 1e6;
	qsort(lat, (size_t)n, sizeof *lat, cmp_double);
	int p99 = (int)((n - 1) * 0.99 + 0.5);
	Dl_info di;
	printf("malloc_from %s\n", dladdr((void *)malloc, &di) && di.dli_fname ? di.dli_fname : "?");
	printf("median_us %.2f\n", median(lat, n) / 1e3);
	printf("p99_us %.2f\n", lat[p99] / 1e3);
	printf("cpu_s %.3f\n", cpu);
	printf("peak_rss_kib %ld\n", peak_rss_kib());
	printf("idle %.2f\n", median(lat, n) / 1e3);
	for (int r = 0; r < n; r++)
		free(kept[r]);
	return 0;
}
