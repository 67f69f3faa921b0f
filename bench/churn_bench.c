/* The workload suite's allocation patterns beyond alloc_bench's: plain
 * malloc/realloc/free/memset, so whatever allocator is preloaded (or
 * glibc's) serves them; scripts/suite.sh runs each under every allocator.
 *
 *   churn_bench prodcons OPS   one thread mallocs blocks of 16 B-4 KiB
 *                              (log-uniform), another frees them: a
 *                              request pipeline's frees on another thread;
 *                              ns per block
 *   churn_bench sweep OPS      for each size of 8 B, 16 B, ... 1 MiB: 64
 *                              live blocks, one freed and malloc'ed (and
 *                              its first and last byte written) per op;
 *                              ns per op, the mean over the sizes (and
 *                              before it sweep_SIZE: each size's)
 *   churn_bench scatter OPS    20000 live blocks of 8-1000 B (after
 *                              larson): per op a random one freed without
 *                              being read, and one of a random size
 *                              malloc'ed and its first byte written and
 *                              read back; ns per op
 *   churn_bench teardown N     N blocks of 64 B malloc'ed and written,
 *                              then freed in a random order without being
 *                              read (a structure torn down), 5 rounds; ns
 *                              per free (and before it teardown_malloc:
 *                              ns per malloc)
 *   churn_bench retake OPS     64 live blocks of 1 MiB (sweep's largest
 *                              size, longer): one freed and one malloc'ed
 *                              per op, its first and last byte written;
 *                              ns per op
 *   churn_bench realloc OPS    256 buffers grown by appends of 1-64 B with
 *                              realloc to 1-64 KiB, then freed and begun
 *                              again; one in 64 grows on to 1-16 MiB; ns per
 *                              realloc
 *   churn_bench large OPS      20 live blocks of 5-25 MiB, one replaced per
 *                              op with malloc + memset 0 of the whole
 *                              block (C++'s new char[n]()); us per op
 *   churn_bench memset0 OPS    memset of 1-256 B at random offsets of a
 *   churn_bench memsetc OPS    4 KiB buffer, sizes and offsets from tables
 *   churn_bench memsetv OPS    of 64K entries (more than a branch predictor
 *   churn_bench memseti OPS    learns), through the PLT: value 0; 0xFF; a
 *                              value drawn per call; the call's number;
 *                              ns per call
 *
 * Output, one "key value" line each: malloc_from OBJECT, then
 * "MODE VALUE", then peak_rss_kib N. Exit status 1 and a message if an
 * allocation fails or a block's bytes are not what was written. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "bench.h"

/* ---- prodcons: a single-producer single-consumer ring ---- */
#define RING 4096
static unsigned char *ring[RING];
static size_t head, tail; /* head: written by the producer; tail: by the consumer */

static void *consumer(void *arg)
{
	long ops = *(long *)arg;
	for (long i = 0; i < ops; i++) {
		size_t t = tail;
		while (__atomic_load_n(&head, __ATOMIC_ACQUIRE) == t)
			;
		unsigned char *p = ring[t % RING];
		if (p[0] != (unsigned char)t)
			die("a block's first byte changed between threads");
		free(p);
		__atomic_store_n(&tail, t + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static double prodcons(long ops)
{
	pthread_t tid;
	uint64_t rng = 0x9E3779B97F4A7C15ull;
	double t0 = now_ns();
	if (pthread_create(&tid, NULL, consumer, &ops))
		die("pthread_create failed");
	for (long i = 0; i < ops; i++) {
		size_t h = head;
		while (h - __atomic_load_n(&tail, __ATOMIC_ACQUIRE) >= RING)
			;
		unsigned char *p = malloc(log_uniform(&rng, 4, 12));
		if (!p)
			die("malloc failed");
		p[0] = (unsigned char)h;
		ring[h % RING] = p;
		__atomic_store_n(&head, h + 1, __ATOMIC_RELEASE);
	}
	pthread_join(tid, NULL);
	return (now_ns() - t0) / (double)ops;
}

/* ---- sweep ---- */
static double sweep(long ops)
{
	enum { LIVE = 64 };
	unsigned char *live[LIVE] = {0};
	double sum = 0;
	int sizes = 0;
	for (size_t n = 8; n <= (size_t)1 << 20; n <<= 1, sizes++) {
		long k = n >= (256 << 10) ? ops / 16 : ops; /* large ones fault pages */
		double t0 = now_ns();
		for (long i = 0; i < k; i++) {
			int s = (int)(i % LIVE);
			if (live[s] && (live[s][0] != (unsigned char)s || live[s][n - 1] != (unsigned char)s))
				die("a block's bytes changed");
			free(live[s]);
			if (!(live[s] = malloc(n)))
				die("malloc failed");
			live[s][0] = live[s][n - 1] = (unsigned char)s;
		}
		double per = (now_ns() - t0) / (double)k;
		printf("sweep_%zu %.1f\n", n, per);
		sum += per;
		for (int s = 0; s < LIVE; s++) {
			free(live[s]);
			live[s] = NULL;
		}
	}
	return sum / sizes;
}

/* ---- scatter ---- */
static double scatter(long ops)
{
	enum { LIVE = 20000 };
	static unsigned char *live[LIVE];
	uint64_t rng = 4141;
	for (int s = 0; s < LIVE; s++)
		if (!(live[s] = malloc(8 + xorshift(&rng) % 993)))
			die("malloc failed");
	double t0 = now_ns();
	for (long i = 0; i < ops; i++) {
		size_t s = xorshift(&rng) % LIVE;
		free(live[s]);
		volatile unsigned char *p = live[s] = malloc(8 + xorshift(&rng) % 993);
		if (!p)
			die("malloc failed");
		p[0] = (unsigned char)i;
		if (p[0] != (unsigned char)i)
			die("a block's first byte changed");
	}
	double per = (now_ns() - t0) / (double)ops;
	for (int s = 0; s < LIVE; s++)
		free(live[s]);
	return per;
}

/* ---- teardown ---- */
static double teardown(long n)
{
	unsigned char **b = malloc((size_t)n * sizeof *b);
	uint64_t rng = 4141;
	double mallocs = 0, frees = 0;
	if (!b)
		die("malloc failed");
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++) {
			if (!(b[i] = malloc(64)))
				die("malloc failed");
			b[i][0] = (unsigned char)i;
		}
		double t1 = now_ns();
		for (long i = n - 1; i > 0; i--) {
			long j = (long)(xorshift(&rng) % (uint64_t)(i + 1));
			unsigned char *t = b[i];
			b[i] = b[j];
			b[j] = t;
		}
		double t2 = now_ns();
		for (long i = 0; i < n; i++)
			free(b[i]);
		if (r) { /* the first round faults the pages in */
			mallocs += t1 - t0;
			frees += now_ns() - t2;
		}
	}
	free(b);
	printf("teardown_malloc %.1f\n", mallocs / 4 / (double)n);
	return frees / 4 / (double)n;
}

/* ---- retake ---- */
static double retake(long ops)
{
	enum { LIVE = 64 };
	const size_t n = 1 << 20;
	unsigned char *live[LIVE];
	uint64_t rng = 4141;
	for (int s = 0; s < LIVE; s++)
		if (!(live[s] = malloc(n)))
			die("malloc failed");
	double t0 = now_ns();
	for (long i = 0; i < ops; i++) {
		int s = (int)(xorshift(&rng) % LIVE);
		free(live[s]);
		if (!(live[s] = malloc(n)))
			die("malloc failed");
		live[s][0] = live[s][n - 1] = (unsigned char)s;
	}
	double per = (now_ns() - t0) / (double)ops;
	for (int s = 0; s < LIVE; s++)
		free(live[s]);
	return per;
}

/* ---- realloc ---- */
static double grow(long ops)
{
	enum { BUFS = 256 };
	struct { unsigned char *p; size_t len, max; } b[BUFS] = {{0}};
	uint64_t rng = 12345;
	double t0 = now_ns();
	for (long i = 0; i < ops; i++) {
		int k = (int)(xorshift(&rng) % BUFS);
		if (b[k].len >= b[k].max) {
			if (b[k].p && b[k].p[b[k].len - 1] != (unsigned char)b[k].len)
				die("a grown buffer lost its bytes");
			free(b[k].p);
			b[k].p = NULL;
			b[k].len = 0;
			b[k].max = xorshift(&rng) % 64 ? log_uniform(&rng, 10, 16) : log_uniform(&rng, 20, 24);
		}
		size_t add = 1 + xorshift(&rng) % (b[k].max < (1 << 20) ? 64 : 65536);
		unsigned char *q = realloc(b[k].p, b[k].len + add);
		if (!q)
			die("realloc failed");
		b[k].p = q;
		b[k].len += add;
		q[b[k].len - 1] = (unsigned char)b[k].len;
	}
	double t = (now_ns() - t0) / (double)ops;
	for (int k = 0; k < BUFS; k++)
		free(b[k].p);
	return t;
}

/* ---- large ---- */
static double large(long ops)
{
	enum { LIVE = 20 };
	unsigned char *live[LIVE] = {0};
	size_t len[LIVE] = {0};
	uint64_t rng = 777;
	double t0 = now_ns();
	for (long i = 0; i < ops; i++) {
		int s = (int)(i % LIVE);
		if (live[s] && (live[s][0] != 1 || live[s][len[s] / 2] != 0))
			die("a large block's bytes changed");
		free(live[s]);
		len[s] = ((size_t)5 << 20) + xorshift(&rng) % ((size_t)20 << 20);
		if (!(live[s] = malloc(len[s])))
			die("malloc failed");
		memset(live[s], 0, len[s]);
		live[s][0] = 1;
	}
	double t = (now_ns() - t0) / (double)ops / 1000;
	for (int s = 0; s < LIVE; s++)
		free(live[s]);
	return t;
}

/* ---- small memset, through the PLT (-fno-builtin) ---- */

#define MS_TABLE 65536
static uint16_t ms_size[MS_TABLE], ms_off[MS_TABLE];
static uint8_t ms_val[MS_TABLE];
static unsigned char ms_buf[2 * 4096] __attribute__((aligned(4096)));

/* value: 0, 0xFF, -1 for the table's, -2 for the call's number. */
static double small_memset(long ops, int value)
{
	uint64_t rng = 0x2545F4914F6CDD1Dull;
	for (int i = 0; i < MS_TABLE; i++) {
		ms_size[i] = (uint16_t)(1 + xorshift(&rng) % 256);
		ms_off[i] = (uint16_t)(xorshift(&rng) % (4096 - 256));
		ms_val[i] = value == -1 ? (uint8_t)xorshift(&rng) : (uint8_t)value;
	}
	/* A warm-up pass over the tables, then the timed calls. */
	for (int i = 0; i < MS_TABLE; i++)
		memset(ms_buf + ms_off[i], ms_val[i], ms_size[i]);
	double t0 = now_ns();
	if (value == -2)
		for (long i = 0; i < ops; i++) {
			size_t k = (size_t)i & (MS_TABLE - 1);
			memset(ms_buf + ms_off[k], (int)i, ms_size[k]);
		}
	else
		for (long i = 0; i < ops; i++) {
			size_t k = (size_t)i & (MS_TABLE - 1);
			memset(ms_buf + ms_off[k], ms_val[k], ms_size[k]);
		}
	double ns = (now_ns() - t0) / (double)ops;
	size_t k = (size_t)(ops - 1) & (MS_TABLE - 1);
	uint8_t want = value == -2 ? (uint8_t)(ops - 1) : ms_val[k];
	for (size_t j = 0; j < ms_size[k]; j++)
		if (ms_buf[ms_off[k] + j] != want)
			die("memset wrote the wrong bytes");
	return ns;
}

static double memset0(long ops)
{
	return small_memset(ops, 0);
}

static double memsetc(long ops)
{
	return small_memset(ops, 0xFF);
}

static double memsetv(long ops)
{
	return small_memset(ops, -1);
}

static double memseti(long ops)
{
	return small_memset(ops, -2);
}

int main(int argc, char **argv)
{
	static const struct bench_mode modes[] = {
		{"prodcons", prodcons}, {"sweep", sweep}, {"scatter", scatter}, {"teardown", teardown}, {"retake", retake}, {"realloc", grow}, {"large", large},
		{"memset0", memset0}, {"memsetc", memsetc}, {"memsetv", memsetv}, {"memseti", memseti}};
	BENCH_MAIN(modes, sizeof modes / sizeof modes[0], argc, argv);
}
