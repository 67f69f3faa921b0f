/* What one periodic report costs: run under libhugezero.so with the arms
 * on (HUGEZERO_AB), it makes calls in every A/B cell a busy process has
 * (memset of 64 KiB to 16 MiB, calloc of 1 to 64 MiB), then writes the
 * report DUMPS times in FORMAT into DIR (as the interval thread does: a
 * temporary file renamed over the last one) and prints the median time
 * of one write, the report's size, and the share of one core it takes at
 * a 10 s interval.
 *   report_bench DIR [FORMAT [DUMPS]]    (defaults: prometheus, 200) */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <unistd.h>

#include "bench.h"

static void *(*volatile opaque_memset)(void *, int, size_t) = memset;

int main(int argc, char **argv)
{
	if (argc < 2)
		die("usage: report_bench DIR [FORMAT [DUMPS]]");
	const char *format = argc > 2 ? argv[2] : "prometheus";
	int dumps = argc > 3 ? atoi(argv[3]) : 200;
	int (*dump)(const char *, const char *) =
		(int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "hz_stats_dump");
	if (!dump || dumps < 1 || dumps > 100000)
		die("run it with libhugezero.so preloaded and HUGEZERO_AB set; DUMPS 1..100000");
	unsigned char *buf = malloc((size_t)16 << 20);
	if (!buf)
		die("no memory");
	for (int r = 0; r < 4; r++) {
		for (size_t n = (size_t)64 << 10; n <= ((size_t)16 << 20); n *= 2)
			opaque_memset(buf, r, n);
		for (size_t n = (size_t)1 << 20; n <= ((size_t)64 << 20); n *= 2)
			free(calloc(1, n));
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/report_bench.%%p.%s", argv[1],
		 strcmp(format, "prometheus") ? format : "prom");
	double *t = malloc((size_t)dumps * sizeof *t);
	if (!t)
		die("no memory");
	for (int i = 0; i < dumps; i++) {
		double t0 = now_ns();
		if (dump(path, format))
			die("hz_stats_dump failed");
		t[i] = now_ns() - t0;
	}
	char name[4200];
	snprintf(name, sizeof name, "%s/report_bench.%d.%s", argv[1], (int)getpid(),
		 strcmp(format, "prometheus") ? format : "prom");
	FILE *f = fopen(name, "r");
	long size = -1;
	if (f && !fseek(f, 0, SEEK_END))
		size = ftell(f);
	if (f)
		fclose(f);
	unlink(name);
	double us = median(t, dumps) / 1e3;
	printf("format %s\nreport_bytes %ld\nwrite_us %.1f\nshare_at_10s %.6f%%\n", format, size, us,
	       us / 1e7 * 100);
	return 0;
}
