/* The kernel benchmark: glibc's memset, every kernel this CPU runs and the
 * library's dispatch, side by side in one run, on one prefaulted buffer.
 * Each measurement is repeated; the variants run in a new random order in
 * each repetition, so drift on a shared machine and the cache state one
 * variant leaves the next hit them all alike; the table gives the median
 * GB/s. Then: random small sizes (1..256 B, from tables of 64K entries)
 * at random offsets, fill byte 0 and a fill byte drawn per call, glibc
 * against the library's exported memset, and the first read of the hint page
 * after a 64 MiB clear, hinted against unhinted.
 *
 * usage: memset_bench [--max SIZE] [--reps N] [--csv FILE] [--fill BYTE]
 *
 * The program is linked with libhugezero.so, so "hugezero" is the memset
 * that library exports, entered as any program enters it; "glibc" is
 * libc.so.6's own memset, looked up in libc itself; the kernels are called
 * from the engine linked in. (dlopen cannot load libhugezero.so: the
 * jemalloc it links uses initial-exec TLS.) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../arch/arch.h"
#include "../include/hugezero.h"
#include "../preload/preload.h"
#include "bench.h"

#define MAXV (HZ_MAX_KERNELS + 2)

struct variant {
	const char *name;
	hz_fill_fn fn;
};

/* Every variant, glibc's included, is called the same way, through a
 * pointer the compiler cannot see through. */
static void *(*volatile glibc_memset)(void *, int, size_t);

/* Seconds per call of fn at size n: calls enough to write 128 MiB (a few
 * milliseconds), at most 2 million. */
static double time_fill(hz_fill_fn fn, unsigned char *buf, int c, size_t n)
{
	size_t calls = ((size_t)128 << 20) / n;
	if (calls < 1)
		calls = 1;
	if (calls > 2000000)
		calls = 2000000;
	/* Warm up with as many calls (at least 2): the cache state the
	 * previous variant left (streaming stores leave nothing in cache,
	 * temporal ones a dirty L3) must not be what is measured. */
	for (size_t i = 0; i < (calls < 2 ? 2 : calls); i++)
		fn(buf, c, n);
	double t0 = now_ns();
	for (size_t i = 0; i < calls; i++)
		fn(buf, c, n);
	return (now_ns() - t0) / 1e9 / (double)calls;
}

/* Powers of two, with a step of 1.5x between them from 1 MiB up, where
 * the policy's thresholds lie. */
static size_t next_size(size_t n)
{
	int pow2 = !(n & (n - 1));
	if (!pow2)
		return n / 3 * 4;
	return n >= ((size_t)1 << 20) ? n / 2 * 3 : n * 2;
}

static const char *fmt_size(size_t n)
{
	static char s[16];
	if (n >= ((size_t)1 << 20))
		snprintf(s, sizeof s, n % ((size_t)1 << 20) ? "%.1fM" : "%.0fM", n / 1048576.0);
	else if (n >= 1024)
		snprintf(s, sizeof s, "%zuK", n >> 10);
	else
		snprintf(s, sizeof s, "%zu", n);
	return s;
}

static unsigned xorshift32(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* ns per call over random sizes at random offsets, with the fill bytes
 * of val (NULL: 0). Tables of 64K entries: more than a branch predictor
 * learns. */
#define RND 65536
static double time_random_small(hz_fill_fn fn, unsigned char *buf, const uint16_t *size,
				const uint16_t *off, const uint8_t *val, int calls)
{
	double t0 = now_ns();
	if (!val)
		for (int i = 0; i < calls; i++)
			fn(buf + off[i & (RND - 1)], 0, size[i & (RND - 1)]);
	else
		for (int i = 0; i < calls; i++)
			fn(buf + off[i & (RND - 1)], val[i & (RND - 1)], size[i & (RND - 1)]);
	return (now_ns() - t0) / calls;
}

/* ns to read the 64 cache lines of the page at p for the first time, each
 * load's address depending on the value the previous one returned (the
 * page reads as zero; the asm hides that from the compiler), in a shuffled
 * order: the latency a program sees on first touch, which prefetchers
 * cannot hide. */
static unsigned line_order[64];

static double time_page_read(const unsigned char *p)
{
	uint64_t x = 0;
	size_t off = 0;
	double t0 = now_ns();
	for (int i = 0; i < 64; i++) {
		x = *(const volatile uint64_t *)(p + off);
		__asm__ volatile("" : "+r"(x));
		off = (size_t)line_order[i] * 64 + x;
	}
	double t = now_ns() - t0;
	if (x)
		abort(); /* the page must read as zero */
	return t;
}

int main(int argc, char **argv)
{
	size_t max = (size_t)1 << 30;
	int reps = 7, fill = 0;
	const char *csv = "memset_bench.csv";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max") && i + 1 < argc && !hz_parse_size(argv[i + 1], &max))
			i++;
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv = argv[++i];
		else if (!strcmp(argv[i], "--fill") && i + 1 < argc)
			fill = (int)strtol(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--max SIZE] [--reps N] [--csv FILE] [--fill BYTE] "
					"\n",
				argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > 101 || max < 64) {
		fprintf(stderr, "memset_bench: --reps must be 1..101, --max at least 64\n");
		return 2;
	}

	hz_options_setup(); /* the engine linked in, for its kernels */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	glibc_memset = libc ? (hz_fill_fn)dlsym(libc, "memset") : NULL;
	hz_fill_fn hz_memset = (hz_fill_fn)dlsym(RTLD_DEFAULT, "memset");
	if (!glibc_memset || !hz_memset || glibc_memset == hz_memset ||
	    !dlsym(RTLD_DEFAULT, "hz_stat")) {
		fprintf(stderr, "memset_bench: glibc's and hugezero's memset not both found\n");
		return 1;
	}
	hz_fill_fn glibc_fill = glibc_memset;

	struct variant v[MAXV];
	int nv = 0;
	v[nv++] = (struct variant){"glibc", glibc_fill};
	for (unsigned k = 0; k < hz_nkernels; k++)
		if (hz_kernel_usable(k) && !(fill && (hz_kernels[k].flags & HZ_K_ZERO_ONLY)))
			v[nv++] = (struct variant){hz_kernels[k].name, hz_kernels[k].fill};
	v[nv++] = (struct variant){"hugezero", hz_memset};

	size_t len = max + 4096;
	/* Huge pages where the kernel allows (as the allocator's arenas), so
	 * TLB misses weigh little; prefaulted before any measurement. */
	unsigned char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	madvise(buf, len, MADV_HUGEPAGE);
	memset(buf, 1, len);

	printf("memset GB/s, median of %d alternated runs, fill byte %#x, CPU %s [%s], "
	       "L2 %zu KiB, L3 %zu KiB\n",
	       reps, fill, hz_cpu.vendor, hz_cpu.features, hz_cpu.cache.size[HZ_CACHE_L2] >> 10,
	       hz_cpu.cache.size[HZ_CACHE_L3] >> 10);
	printf("%9s", "size");
	for (int i = 0; i < nv; i++)
		printf(" %10s", v[i].name);
	printf(" %10s %8s %8s  %s\n", "policy", "hz/glibc", "hz/best", "best kernel");

	FILE *out = fopen(csv, "w");
	if (!out) {
		perror(csv);
		return 1;
	}
	fprintf(out, "size,variant,gbps\n");

	double t[MAXV][101];
	unsigned order_seed = 2463534242u;
	for (size_t n = 64; n <= max; n = next_size(n)) {
		for (int r = 0; r < reps; r++) {
			/* A new random order each repetition: what a variant
			 * inherits from the one before it averages out. */
			int order[MAXV];
			for (int j = 0; j < nv; j++)
				order[j] = j;
			for (int j = nv - 1; j > 0; j--) {
				int k = (int)(xorshift32(&order_seed) % (unsigned)(j + 1)), tmp = order[j];
				order[j] = order[k];
				order[k] = tmp;
			}
			for (int j = 0; j < nv; j++)
				t[order[j]][r] = time_fill(v[order[j]].fn, buf, fill, n);
		}
		double gbps[MAXV], best = 0;
		int besti = 0;
		for (int i = 0; i < nv; i++) {
			gbps[i] = (double)n / median(t[i], reps) / 1e9;
			fprintf(out, "%zu,%s,%.3f\n", n, v[i].name, gbps[i]);
			if (i > 0 && i < nv - 1 && gbps[i] > best)
				best = gbps[i], besti = i;
		}
		printf("%9s", fmt_size(n));
		for (int i = 0; i < nv; i++)
			printf(" %10.1f", gbps[i]);
		printf(" %10s %8.3f %8.3f  %s\n", hz_kernel_for(fill, n), gbps[nv - 1] / gbps[0],
		       gbps[nv - 1] / best, v[besti].name);
		fflush(stdout);
	}

	/* Random small sizes at random offsets of a 4 KiB buffer, with fill
	 * byte 0 and with a byte drawn per call: the common case must not get
	 * slower, whatever the value. */
	static uint16_t size[RND], off[RND];
	static uint8_t val[RND];
	unsigned seed = 12345;
	for (int i = 0; i < RND; i++) {
		size[i] = (uint16_t)(1 + xorshift32(&seed) % 256);
		off[i] = (uint16_t)(xorshift32(&seed) % (4096 - 256));
		val[i] = (uint8_t)xorshift32(&seed);
	}
	hz_fill_fn front = hz_memset;
	int calls = 1000000, rr = reps < 31 ? 31 : reps;
	double ts[2][101], g = 0, h = 0;
	for (int vary = 0; vary < 2; vary++) {
		for (int r = 0; r < rr; r++) {
			const uint8_t *vv = vary ? val : NULL;
			ts[r & 1][r] = time_random_small(r & 1 ? front : glibc_fill, buf, size, off, vv, calls);
			ts[!(r & 1)][r] = time_random_small(r & 1 ? glibc_fill : front, buf, size, off, vv, calls);
		}
		g = median(ts[0], rr), h = median(ts[1], rr);
		printf("%srandom sizes 1..256 B, random offsets, %s: glibc %.2f ns/call, hugezero %.2f "
		       "ns/call, hugezero/glibc time %.3f\n", vary ? "" : "\n", vary ? "fill byte per call" : "fill byte 0",
		       g, h, h / g);
		fprintf(out, "random1-256%s,glibc_ns,%.3f\nrandom1-256%s,hugezero_ns,%.3f\n", vary ? "-vary" : "", g,
			vary ? "-vary" : "", h);
	}

	/* The same sizes below 64 B ending where a mapping ends, before an
	 * unmapped page (a buffer at the end of its mapping): a masked
	 * vector store reaching past the end costs a fault suppression. */
	unsigned char *two = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two == MAP_FAILED || mprotect(two + 4096, 4096, PROT_NONE))
		return 1;
	static uint16_t back[RND];
	static uint16_t sz64[RND];
	for (int i = 0; i < RND; i++) {
		sz64[i] = (uint16_t)(1 + size[i] % 63);
		back[i] = (uint16_t)(64 - sz64[i]); /* the fill ends at the page's end */
	}
	unsigned char *edge = two + 4096 - 64;
	for (int r = 0; r < rr; r++) {
		ts[r & 1][r] = time_random_small(r & 1 ? front : glibc_fill, edge, sz64, back, val, calls);
		ts[!(r & 1)][r] = time_random_small(r & 1 ? glibc_fill : front, edge, sz64, back, val, calls);
	}
	g = median(ts[0], rr), h = median(ts[1], rr);
	printf("random sizes 1..63 B ending before an unmapped page: glibc %.2f ns/call, hugezero "
	       "%.2f ns/call, hugezero/glibc time %.3f\n", g, h, h / g);
	fprintf(out, "edge1-63,glibc_ns,%.3f\nedge1-63,hugezero_ns,%.3f\n", g, h);
	munmap(two, 2 * 4096);

	/* First read of the hint page after clearing 64 MiB. */
	size_t cn = (size_t)64 << 20;
	for (int i = 0; i < 64; i++)
		line_order[i] = (unsigned)i;
	for (int i = 63; i > 0; i--) {
		int j = (int)(xorshift32(&seed) % (unsigned)(i + 1));
		unsigned tmp = line_order[i];
		line_order[i] = line_order[j];
		line_order[j] = tmp;
	}
	if (cn <= max) {
		double th[101], tu[101];
		for (int r = 0; r < rr; r++) {
			glibc_memset(buf, 1, cn);
			hz_clear_hinted(buf, cn, buf);
			th[r] = time_page_read(buf);
			glibc_memset(buf, 1, cn);
			hz_clear(buf, cn);
			tu[r] = time_page_read(buf);
		}
		/* The clock's own cost, read the same way, is reported and
		 * taken off both figures. */
		double tc[101];
		for (int r = 0; r < rr; r++) {
			double t0 = now_ns();
			tc[r] = now_ns() - t0;
		}
		double a = median(th, rr), b = median(tu, rr), o = median(tc, rr);
		printf("first read of the hint page (64 dependent loads, one per line) after a "
		       "64 MiB clear: hinted %.0f ns, unhinted (%s) %.0f ns, clock %.0f ns; "
		       "unhinted/hinted %.2f, net of the clock %.2f\n",
		       a, hz_kernel_for(0, cn), b, o, b / a, (b - o) / (a - o));
		fprintf(out, "hint64M,hinted_ns,%.1f\nhint64M,unhinted_ns,%.1f\nhint64M,clock_ns,%.1f\n",
			a, b, o);
	}
	fclose(out);
	printf("CSV: %s\n", csv);
	return 0;
}
