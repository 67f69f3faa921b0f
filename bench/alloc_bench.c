/* The allocator benchmark: plain malloc/calloc/free, so whatever allocator
 * is preloaded (or glibc's, with none) serves it. It links no room of the
 * library. One mode per process, so the peak RSS it reports is that
 * allocator's alone; scripts/alloc-bench.sh runs every mode under every
 * allocator, alternated, and takes medians.
 *
 *   alloc_bench loop SIZE [ROUNDS]     calloc + touch + free, one untimed
 *                                      warm-up round, then ROUNDS timed
 *   alloc_bench clear SIZE [ROUNDS]    loop SIZE [ROUNDS], then in the same
 *                                      process one memset 0 of a prefaulted
 *                                      SIZE block (the clear's bandwidth,
 *                                      to compare the loop's round with)
 *   alloc_bench fresh SIZE [BLOCKS]    calloc + touch of BLOCKS distinct
 *                                      blocks, never freed (nothing was
 *                                      freed before either)
 *   alloc_bench sparse SIZE [BLOCKS]   the same, 1% of the pages touched (a
 *                                      hash table sized for its capacity)
 *   alloc_bench floor SIZE [BLOCKS]    the populate floors alone (below)
 *   alloc_bench zeroes SIZE [BLOCKS]   fresh malloc, then memset 0 of the
 *                                      whole block (a JVM's direct buffer,
 *                                      C++'s new char[n]())
 *   fresh and zeroes time, between the blocks, the populate floor:
 *   one MADV_POPULATE_WRITE of a fresh mapping of SIZE bytes (asked for
 *   huge pages, as an allocator would; and on small pages), unmapped at
 *   once
 *   alloc_bench small THREADS [PAIRS [ROUNDS]]
 *                                      malloc/free pairs below 1 MiB on a
 *                                      working set of live blocks per thread
 *   alloc_bench mix                    loop 32M (5 rounds), then loop 256M
 *                                      in the same process: its median
 *   alloc_bench churn OPS              a server's large buffers: 16 live
 *                                      blocks of 1-64 MiB, one replaced per
 *                                      op (free, calloc, touch); then idle
 *
 * SIZE is bytes, with an optional K, M or G suffix. "Touch" writes one byte
 * in every 4 KiB page, as a program that uses the memory does.
 *
 * Output, one "key value..." line each:
 *   malloc_from OBJECT               the object whose malloc this program calls
 *   MODE SIZE_OR_THREADS MEDIAN_NS   loop: ns per round; fresh, sparse,
 *                                    zeroes: ns per block;
 *                                    small: ns per malloc/free pair per thread
 *                                    (wall time of a round / pairs per thread);
 *                                    clear prints the loop line
 *   clear SIZE MEDIAN_NS             clear: ns per memset 0 of SIZE bytes
 *                                    already faulted in (median of 9)
 *   floor SIZE MEDIAN_NS             fresh, zeroes (sparse: 0): ns per
 *   floor4k SIZE MEDIAN_NS           MADV_POPULATE_WRITE of SIZE fresh bytes,
 *   floor4k_touch SIZE MEDIAN_NS     huge pages asked for; small pages (0
 *                                    where the kernel has no such advice);
 *                                    small pages and a touch of each after
 *   peak_rss_kib N                   VmHWM (ru_maxrss if /proc is missing)
 * Exit status 1 and a message if an allocation fails or calloc's memory is
 * not zero. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "bench.h"

#define PAGE 4096

/* Keeps the compiler from proving the block unused: a calloc + stores +
 * free it can see through may legally be deleted. */
static inline void escape(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void touch(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i += PAGE)
		p[i] = 1;
	escape(p);
}

/* Dies unless the first and last byte of every page of [p, p+n) is `v`
 * (last byte: zero only if `v` is, since touch writes the first). */
static void check(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i += PAGE) {
		size_t end = i + PAGE < n ? i + PAGE : n;
		if (p[i] != v || p[end - 1] != (i + 1 == end ? v : 0))
			die("calloc returned memory that is not zero");
	}
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	switch (*end) {
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10; end++; break;
	}
	if (*end || !v)
		die("bad size");
	return (size_t)v;
}

static double *times(int n)
{
	double *t = malloc((size_t)n * sizeof *t);
	if (!t)
		die("out of memory");
	return t;
}

/* Median ns of one calloc + touch + free of n bytes, after a warm-up round
 * that makes the block a recycled one for allocators that keep it. */
static double mode_loop(size_t n, int rounds)
{
	double *t = times(rounds);
	for (int r = -1; r < rounds; r++) {
		double t0 = now_ns();
		unsigned char *p = calloc(1, n);
		if (!p)
			die("calloc failed");
		touch(p, n);
		free(p);
		if (r >= 0)
			t[r] = now_ns() - t0;
	}
	/* Untimed: the block calloc recycles after dirty frees is zero. */
	unsigned char *p = calloc(1, n);
	if (!p)
		die("calloc failed");
	check(p, n, 0);
	free(p);
	double m = median(t, rounds);
	free(t);
	return m;
}

/* Median ns of one memset 0 of n bytes already faulted in (the block
 * written first with another value), over 9 clears after one warm-up: the
 * time the loop's round would take if it only cleared its block once. */
static double mode_clear(size_t n)
{
	double t[9];
	unsigned char *p = malloc(n);
	if (!p)
		die("malloc failed");
	memset(p, 1, n);
	for (int r = -1; r < 9; r++) {
		escape(p);
		double t0 = now_ns();
		memset(p, 0, n);
		escape(p);
		if (r >= 0)
			t[r] = now_ns() - t0;
	}
	check(p, n, 0);
	free(p);
	return median(t, 9);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* ns of one MADV_POPULATE_WRITE of a fresh mapping of n bytes, huge
 * pages asked for or refused, and with touched set a touch of every page
 * after (what the program pays for the pages once populated: on a VM
 * whose host builds its mappings at the first access, more than the
 * populate); the mapping unmapped after. -1 where the kernel has no such
 * advice. */
static double populate_floor(size_t n, int huge, int touched)
{
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		die("mmap failed");
	madvise(m, n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	double t0 = now_ns();
	int rc = madvise(m, n, MADV_POPULATE_WRITE);
	if (touched && !rc)
		touch(m, n);
	double t = now_ns() - t0;
	munmap(m, n);
	return rc ? -1 : t;
}

enum fresh_kind { FRESH_TOUCH, FRESH_SPARSE, FRESH_ZEROES, FRESH_FLOOR };
static void *(*volatile opaque_memset)(void *, int, size_t) = memset;

/* Median ns of one fresh block of n bytes as kind says: calloc and a touch
 * of every page, calloc and a touch of 1 in 100 pages, or malloc and a
 * memset 0 of it all. Blocks are kept, so no block reuses another's
 * memory. Between them, the populate floors (floor, floor4k). */
static double mode_fresh(size_t n, int blocks, enum fresh_kind kind, double *floor, double *floor4k,
			 double *floor4k_touch)
{
	double *t = times(blocks), *f = times(blocks), *f4 = times(blocks), *f4t = times(blocks);
	unsigned char **b = malloc((size_t)blocks * sizeof *b);
	if (!b)
		die("out of memory");
	for (int i = 0; i < blocks; i++) {
		b[i] = NULL;
		t[i] = 0;
		if (kind != FRESH_FLOOR) { /* else the floors alone */
			double t0 = now_ns();
			b[i] = kind == FRESH_ZEROES ? malloc(n) : calloc(1, n);
			if (!b[i])
				die("calloc failed");
			if (kind == FRESH_ZEROES) /* through a pointer: never folded into a calloc */
				opaque_memset(b[i], 0, n);
			else if (kind == FRESH_SPARSE)
				for (size_t k = 0; k < n; k += 100 * PAGE)
					b[i][k] = 1;
			else
				touch(b[i], n);
			t[i] = now_ns() - t0;
			escape(b[i]);
		}
		/* Not beside sparse blocks: the floor's pages would be the peak. */
		f[i] = kind == FRESH_SPARSE ? 0 : populate_floor(n, 1, 0);
		f4[i] = kind == FRESH_SPARSE ? 0 : populate_floor(n, 0, 0);
		f4t[i] = kind == FRESH_SPARSE ? 0 : populate_floor(n, 0, 1);
	}
	for (int i = 0; kind == FRESH_TOUCH && i < blocks; i++)
		check(b[i], n, 1);
	double m = median(t, blocks);
	*floor = median(f, blocks);
	*floor4k = median(f4, blocks);
	*floor4k_touch = median(f4t, blocks);
	for (int i = 0; i < blocks; i++)
		free(b[i]);
	free(b);
	free(t);
	free(f);
	free(f4);
	free(f4t);
	return m;
}

/* small: each thread keeps SLOTS live blocks and replaces a random one per
 * pair (free, then malloc a new size), writing a tag into the first 8 bytes
 * and checking it at free. Sizes are log-uniform from 8 B to 64 KiB
 * (uniform within each power of two), and 1 in 128 from 64 KiB to
 * 1 MiB - 1, hugezero's largest small size. Sizes come from a table drawn
 * up front (no libm in the timed loop); every allocator gets the same
 * sequence (fixed seeds). */
#define SLOTS 1000
#define NSIZES 8192

struct worker {
	char pad[64]; /* keeps one thread's slots off the next one's fields */
	pthread_t tid;
	uint64_t rng;
	long pairs;
	int rounds;
	pthread_barrier_t *bar;
	uint32_t sizes[NSIZES];
	uint64_t *slot[SLOTS];
};

static void draw_sizes(struct worker *w)
{
	for (int i = 0; i < NSIZES; i++) {
		uint64_t r = xorshift(&w->rng);
		int big = (r & 127) == 0;
		/* bit: 3..15, or 16..19 for the few big ones */
		unsigned bit = big ? 16 + (r >> 8 & 0xffff) % 4 : 3 + (r >> 8 & 0xffff) % 13;
		w->sizes[i] = (1u << bit) + (uint32_t)((r >> 32) & ((1u << bit) - 1));
	}
}

static void run_pairs(struct worker *w, long pairs)
{
	uint64_t rng = w->rng;
	for (long i = 0; i < pairs; i++) {
		uint64_t r = xorshift(&rng);
		unsigned s = (unsigned)(r % SLOTS);
		uint64_t *p = w->slot[s];
		if (p) {
			if (*p != ((uintptr_t)p ^ s))
				die("a small block's first bytes changed while it was live");
			free(p);
		}
		p = malloc(w->sizes[(r >> 32) % NSIZES]);
		if (!p)
			die("malloc failed");
		*p = (uintptr_t)p ^ s;
		w->slot[s] = p;
	}
	w->rng = rng;
}

/* A warm-up round (fills the slots), then `rounds` timed rounds; the main
 * thread times each round between two barriers. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (int r = -1; r < w->rounds; r++) {
		pthread_barrier_wait(w->bar);
		run_pairs(w, w->pairs);
		pthread_barrier_wait(w->bar);
	}
	for (int s = 0; s < SLOTS; s++)
		free(w->slot[s]);
	return NULL;
}

static double mode_small(int threads, long pairs, int rounds)
{
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
	struct worker *w = calloc((size_t)threads, sizeof *w);
	double *t = times(rounds);
	if (!w)
		die("out of memory");
	for (int i = 0; i < threads; i++) {
		w[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
		w[i].pairs = pairs;
		w[i].rounds = rounds;
		w[i].bar = &bar;
		draw_sizes(&w[i]);
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
			die("pthread_create failed");
	}
	for (int r = -1; r < rounds; r++) {
		pthread_barrier_wait(&bar);
		double t0 = now_ns();
		pthread_barrier_wait(&bar);
		if (r >= 0)
			t[r] = (now_ns() - t0) / (double)pairs;
	}
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	pthread_barrier_destroy(&bar);
	free(w);
	double m = median(t, rounds);
	free(t);
	return m;
}

/* churn: 16 slots of large blocks, log-uniform 1-64 MiB (about 240 MiB
 * live), one random slot freed and calloc'ed (and touched) per op; the
 * median ns per op. What a dirty-memory budget trades: memory kept for
 * reuse (RSS) against pages faulted in again. */
static double mode_churn(int ops)
{
	enum { CHURN_SLOTS = 16 };
	unsigned char *slot[CHURN_SLOTS] = {0};
	size_t len[CHURN_SLOTS] = {0};
	double *t = times(ops);
	uint64_t rng = 0x2545F4914F6CDD1Dull;
	for (int i = -2 * CHURN_SLOTS; i < ops; i++) {
		uint64_t r = xorshift(&rng);
		unsigned k = (unsigned)(r % CHURN_SLOTS);
		/* 2^20 .. 2^26 bytes, uniform within each power of two */
		unsigned bit = 20 + (unsigned)(r >> 8 & 0xff) % 6;
		size_t n = ((size_t)1 << bit) + ((r >> 32) & (((size_t)1 << bit) - 1));
		double t0 = now_ns();
		free(slot[k]);
		slot[k] = calloc(1, n);
		if (!slot[k])
			die("calloc failed");
		touch(slot[k], n);
		len[k] = n;
		if (i >= 0)
			t[i] = now_ns() - t0;
	}
	for (int k = 0; k < CHURN_SLOTS; k++) {
		check(slot[k], len[k], 1);
		free(slot[k]);
	}
	double m = median(t, ops);
	free(t);
	return m;
}

static int usage(void)
{
	fprintf(stderr, "usage: alloc_bench loop SIZE [ROUNDS]\n"
			"       alloc_bench clear SIZE [ROUNDS]\n"
			"       alloc_bench fresh|sparse|zeroes SIZE [BLOCKS]\n"
			"       alloc_bench small THREADS [PAIRS [ROUNDS]]\n"
			"       alloc_bench mix\n"
			"       alloc_bench churn OPS\n");
	return 2;
}

/* Default counts: about 1 GiB of calloc per process for loop (at least 7
 * rounds, at most 1001), 512 MiB for fresh (5 to 201 blocks). */
static int count_for(size_t n, size_t budget, int lo, int hi)
{
	size_t c = budget / n;
	return c < (size_t)lo ? lo : c > (size_t)hi ? hi : (int)c;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (argc < 3 && strcmp(argv[1], "mix")))
		return usage();
	const char *mode = argv[1];
	Dl_info di;
	printf("malloc_from %s\n", dladdr((void *)malloc, &di) && di.dli_fname ? di.dli_fname : "?");
	if (!strcmp(mode, "fresh") || !strcmp(mode, "sparse") || !strcmp(mode, "zeroes") || !strcmp(mode, "floor")) {
		size_t n = parse_size(argv[2]);
		int c = argc > 3 ? atoi(argv[3]) : count_for(n, (size_t)512 << 20, 5, 201);
		if (c < 1)
			return usage();
		double floor, floor4k, floor4k_touch;
		enum fresh_kind k = !strcmp(mode, "fresh") ? FRESH_TOUCH : mode[0] == 's' ? FRESH_SPARSE
								  : mode[0] == 'z' ? FRESH_ZEROES : FRESH_FLOOR;
		double m = mode_fresh(n, c, k, &floor, &floor4k, &floor4k_touch);
		if (k != FRESH_FLOOR)
			printf("%s %zu %.0f\n", mode, n, m);
		printf("floor %zu %.0f\nfloor4k %zu %.0f\nfloor4k_touch %zu %.0f\n", n, floor, n, floor4k, n, floor4k_touch);
	} else if (!strcmp(mode, "loop") || !strcmp(mode, "clear")) {
		size_t n = parse_size(argv[2]);
		int clear = mode[0] == 'c';
		int c = argc > 3 ? atoi(argv[3])
				 : count_for(n, (size_t)1 << 30, 7, 1001);
		if (c < 1)
			return usage();
		double m = mode_loop(n, c);
		printf("%s %zu %.0f\n", clear ? "loop" : mode, n, m);
		if (clear)
			printf("clear %zu %.0f\n", n, mode_clear(n));
	} else if (!strcmp(mode, "small")) {
		int threads = atoi(argv[2]);
		long pairs = argc > 3 ? atol(argv[3]) : 200000;
		int rounds = argc > 4 ? atoi(argv[4]) : 11;
		if (threads < 1 || threads > 256 || pairs < 1 || rounds < 1)
			return usage();
		printf("small %d %.1f\n", threads, mode_small(threads, pairs, rounds));
	} else if (!strcmp(mode, "mix")) {
		/* Smaller blocks freed first, then a big one recycled: what the
		 * dirty budget keeps when both do not fit in it. */
		mode_loop((size_t)32 << 20, 5);
		printf("mix 268435456 %.0f\n", mode_loop((size_t)256 << 20, 9));
	} else if (!strcmp(mode, "churn")) {
		int ops = atoi(argv[2]);
		if (ops < 1)
			return usage();
		printf("churn %d %.0f\n", ops, mode_churn(ops));
	} else {
		return usage();
	}
	printf("peak_rss_kib %ld\n", peak_rss_kib());
	return 0;
}
