/* Multi-threaded small-object patterns, the ones public allocator
 * benchmarks use to tell allocators apart: plain malloc/free from several
 * threads, so whatever allocator is preloaded (or glibc's) serves them;
 * the workload suite runs each under every allocator.
 *
 *   threads_bench server OPS   a server simulation (after larson): 2
 *                              threads, each with 1000 slots; per op a
 *                              random slot's block is freed and a block of
 *                              16-1024 B (log-uniform) takes its place;
 *                              every OPS/16 ops a thread retires and hands
 *                              its slots to a new thread, which frees what
 *                              the old one allocated; ns per op
 *   threads_bench scratch OPS  false sharing (after cache-scratch): the
 *                              main thread allocates two 8-byte objects and
 *                              hands one to each of 2 threads, which free
 *                              it, then malloc an 8-byte object, write it
 *                              500 times and free it, OPS times each; ns
 *                              per malloc/write/free round
 *   threads_bench grow OPS     4 threads, each growing a live set of
 *                              blocks of 16-256 B: per op two blocks
 *                              allocated and one random live block freed,
 *                              the rest freed at the end; ns per op
 *   threads_bench leak OPS     2 threads allocating blocks of 16-512 B in
 *                              batches of 100, freeing 90 of each batch at
 *                              once and leaking 10 (a steady leak); ns per
 *                              block
 *   threads_bench batches OPS  2 producer and 2 consumer threads (after
 *                              xmalloc-test): a producer fills a batch of
 *                              4096 blocks of 64 B (each tagged) and queues
 *                              it, at most 64 batches queued; a consumer
 *                              takes a batch, checks and frees its blocks:
 *                              every block freed by another thread than
 *                              its own; ns per block
 *   threads_bench threads OPS  threads that live for one block each (after
 *                              mleak and mstress): rounds of 8 threads,
 *                              each callocs 128 B, swaps it into a random
 *                              slot of 1000 and frees the block it finds
 *                              there (another, exited thread's), then
 *                              allocates and frees 16 blocks of 16-512 B
 *                              and exits; OPS threads in all; ns per
 *                              thread
 *   threads_bench bursts OPS   1 thread (after glibc-bench's simple case):
 *                              bursts of 25, 100, 400 and 1600 blocks of
 *                              one size (16, 32, 64, 128 and 256 B), each
 *                              written whole, then freed, the first half
 *                              oldest first and the rest newest first;
 *                              ns per malloc/free pair
 *   threads_bench mixed OPS    4 threads sharing 512 slots: per op a block
 *                              of 8 B to 4 MiB (log-uniform: every octave
 *                              as likely) is taken, its pages written,
 *                              and swapped into a random slot; the block
 *                              found there, most often another thread's,
 *                              is checked and freed; ns per op
 *
 * Output, one "key value" line each: malloc_from OBJECT, "MODE VALUE",
 * peak_rss_kib N, minor_faults N. Exit status 1 and a message when an allocation fails or
 * a block's bytes are not what its thread wrote. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "bench.h"

static unsigned char *get(size_t n, unsigned char tag)
{
	unsigned char *p = malloc(n);
	if (!p)
		die("malloc failed");
	p[0] = tag;
	p[n - 1] = tag;
	return p;
}

/* Runs fn(arg[i]) on n threads at once; the wall time in ns. */
static double on_threads(int n, void *(*fn)(void *), void *arg, size_t stride)
{
	pthread_t t[16];
	double t0 = now_ns();
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, (char *)arg + (size_t)i * stride))
			die("pthread_create failed");
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return now_ns() - t0;
}

/* ---- server: slots handed to a new thread as threads retire ---- */

#define SLOTS 1000
struct server {
	unsigned char *slot[SLOTS];
	size_t len[SLOTS];
	long left;      /* ops left for this lineage of threads */
	long per;       /* ops before a thread retires */
	uint64_t rng;
};

static void *server_main(void *arg)
{
	struct server *s = arg;
	long n = s->left < s->per ? s->left : s->per;
	for (long i = 0; i < n; i++) {
		size_t k = xorshift(&s->rng) % SLOTS;
		if (s->slot[k][0] != (unsigned char)k || s->slot[k][s->len[k] - 1] != (unsigned char)k)
			die("a block's bytes changed");
		free(s->slot[k]);
		s->len[k] = log_uniform(&s->rng, 4, 10);
		s->slot[k] = get(s->len[k], (unsigned char)k);
	}
	s->left -= n;
	if (s->left > 0) { /* retire: a new thread takes the slots */
		pthread_t t;
		if (pthread_create(&t, NULL, server_main, s))
			die("pthread_create failed");
		pthread_join(t, NULL);
	}
	return NULL;
}

static double server(long ops)
{
	static struct server s[2];
	for (int i = 0; i < 2; i++) {
		s[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
		s[i].left = ops / 2;
		s[i].per = ops / 16 > 0 ? ops / 16 : 1;
		for (size_t k = 0; k < SLOTS; k++) {
			s[i].len[k] = log_uniform(&s[i].rng, 4, 10);
			s[i].slot[k] = get(s[i].len[k], (unsigned char)k);
		}
	}
	double ns = on_threads(2, server_main, s, sizeof s[0]);
	for (int i = 0; i < 2; i++)
		for (size_t k = 0; k < SLOTS; k++)
			free(s[i].slot[k]);
	return ns / (double)ops;
}

/* ---- scratch: objects of the main thread's, then each thread's own ---- */

struct scratch {
	unsigned char *given;
	long rounds;
} __attribute__((aligned(64)));

static void *scratch_main(void *arg)
{
	struct scratch *s = arg;
	free(s->given);
	for (long r = 0; r < s->rounds; r++) {
		volatile unsigned char *p = get(8, 1);
		for (int w = 0; w < 500; w++)
			p[w & 7] = (unsigned char)w;
		if (p[7] != (unsigned char)495) /* the last write to byte 7 */
			die("an object's bytes changed");
		free((void *)p);
	}
	return NULL;
}

static double scratch(long ops)
{
	static struct scratch s[2];
	for (int i = 0; i < 2; i++) {
		s[i].given = get(8, 0);
		s[i].rounds = ops;
	}
	return on_threads(2, scratch_main, s, sizeof s[0]) / (double)ops;
}

/* A thread's share of ops and its own random sequence. */
struct worker {
	long ops;
	uint64_t rng;
} __attribute__((aligned(64)));

/* ops shared by n threads running fn; ns per op. */
static double on_workers(int n, void *(*fn)(void *), long ops)
{
	static struct worker w[16];
	for (int i = 0; i < n; i++) {
		w[i].ops = ops / n;
		w[i].rng = 0xD1B54A32D192ED03ull * (uint64_t)(i + 1);
	}
	return on_threads(n, fn, w, sizeof w[0]) / (double)ops;
}

/* ---- grow: live sets growing on 4 threads ---- */

static void *grow_main(void *arg)
{
	struct worker *g = arg;
	size_t cap = (size_t)g->ops + 2, n = 0;
	unsigned char **live = malloc(cap * sizeof *live);
	if (!live)
		die("malloc failed");
	for (long i = 0; i < g->ops; i++) {
		live[n++] = get(log_uniform(&g->rng, 4, 8), (unsigned char)i);
		live[n++] = get(log_uniform(&g->rng, 4, 8), (unsigned char)i);
		size_t k = xorshift(&g->rng) % n;
		free(live[k]);
		live[k] = live[--n];
	}
	for (size_t k = 0; k < n; k++)
		free(live[k]);
	free(live);
	return NULL;
}

static double grow(long ops)
{
	return on_workers(4, grow_main, ops);
}

/* ---- leak: a tenth of every batch never freed ---- */

static void *leak_main(void *arg)
{
	struct worker *l = arg;
	unsigned char *batch[100];
	for (long b = 0; b < l->ops / 100; b++) {
		for (int i = 0; i < 100; i++)
			batch[i] = get(log_uniform(&l->rng, 4, 9), (unsigned char)i);
		for (int i = 0; i < 90; i++) {
			if (batch[i][0] != (unsigned char)i)
				die("a block's bytes changed");
			free(batch[i]);
		}
	}
	return NULL;
}

static double leak(long ops)
{
	return on_workers(2, leak_main, ops);
}

/* ---- mixed: blocks of every size, freed by other threads ---- */

#define MIXED_SLOTS 512
static unsigned char *mixed_slot[MIXED_SLOTS];

/* A block's first 4 bytes hold its size (from 8 B up) and its last
 * byte the size's low byte: the thread that frees it checks both. */
static void *mixed_main(void *arg)
{
	struct worker *w = arg;
	for (long i = 0; i < w->ops; i++) {
		uint32_t n = (uint32_t)log_uniform(&w->rng, 3, 22);
		unsigned char *p = get(n, (unsigned char)n);
		for (size_t k = 4096; k < n; k += 4096)
			p[k] = 1;
		memcpy(p, &n, 4);
		unsigned char *old = __atomic_exchange_n(&mixed_slot[xorshift(&w->rng) % MIXED_SLOTS], p,
							 __ATOMIC_ACQ_REL);
		if (old) {
			uint32_t m;
			memcpy(&m, old, 4);
			if (m < 8 || m >= (1u << 22) || old[m - 1] != (unsigned char)m)
				die("a block's bytes changed");
			free(old);
		}
	}
	return NULL;
}

static double mixed(long ops)
{
	double ns = on_workers(4, mixed_main, ops);
	for (size_t k = 0; k < MIXED_SLOTS; k++)
		free(mixed_slot[k]);
	return ns;
}

/* ---- batches: producers' blocks freed by consumers ---- */

#define BATCH 4096
#define QUEUED 64
struct batch {
	struct batch *next;
	unsigned char *block[BATCH];
};
static struct {
	pthread_mutex_t lock;
	pthread_cond_t more, less;
	struct batch *head;
	int queued;
	long made, taken; /* batches queued so far, and taken */
	long total;       /* batches in all */
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER, .less = PTHREAD_COND_INITIALIZER};

static void *producer_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&q.lock);
		int go = q.made < q.total;
		q.made += go;
		pthread_mutex_unlock(&q.lock);
		if (!go)
			return NULL;
		struct batch *b = malloc(sizeof *b);
		if (!b)
			die("malloc failed");
		for (int i = 0; i < BATCH; i++)
			b->block[i] = get(64, (unsigned char)i);
		pthread_mutex_lock(&q.lock);
		while (q.queued >= QUEUED)
			pthread_cond_wait(&q.less, &q.lock);
		b->next = q.head;
		q.head = b;
		q.queued++;
		pthread_cond_signal(&q.more);
		pthread_mutex_unlock(&q.lock);
	}
}

static void *consumer_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&q.lock);
		while (!q.head && q.taken < q.total)
			pthread_cond_wait(&q.more, &q.lock);
		struct batch *b = q.head;
		if (b) {
			q.head = b->next;
			q.queued--;
			q.taken++;
			pthread_cond_signal(&q.less);
		}
		if (q.taken == q.total)
			pthread_cond_broadcast(&q.more);
		pthread_mutex_unlock(&q.lock);
		if (!b)
			return NULL;
		for (int i = 0; i < BATCH; i++) {
			if (b->block[i][0] != (unsigned char)i || b->block[i][63] != (unsigned char)i)
				die("a block's bytes changed");
			free(b->block[i]);
		}
		free(b);
	}
}

static void *batches_role(void *arg)
{
	return (*(int *)arg ? consumer_main : producer_main)(NULL);
}

static double batches(long ops)
{
	static int role[4] = {0, 1, 0, 1};
	q.total = ops / BATCH > 0 ? ops / BATCH : 1;
	return on_threads(4, batches_role, role, sizeof role[0]) / (double)(q.total * BATCH);
}

/* ---- threads: a thread per block ---- */

#define ROUND 8
#define TRANSFER 1000
static unsigned char *transfer[TRANSFER];

static void *brief_main(void *arg)
{
	struct worker *w = arg;
	unsigned char *p = calloc(1, 128);
	if (!p)
		die("calloc failed");
	p[0] = 0xA5;
	p[127] = 0xA5;
	unsigned char *old = __atomic_exchange_n(&transfer[xorshift(&w->rng) % TRANSFER], p, __ATOMIC_ACQ_REL);
	if (old && (old[0] != 0xA5 || old[127] != 0xA5 || old[64]))
		die("a block's bytes changed");
	free(old);
	unsigned char *own[16];
	for (int i = 0; i < 16; i++)
		own[i] = get(log_uniform(&w->rng, 4, 9), (unsigned char)i);
	for (int i = 0; i < 16; i++)
		free(own[i]);
	return NULL;
}

static double threads(long ops)
{
	static struct worker w[ROUND];
	long rounds = ops / ROUND > 0 ? ops / ROUND : 1;
	double ns = 0;
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < ROUND; i++)
			w[i].rng = 0xD1B54A32D192ED03ull * (uint64_t)(r * ROUND + i + 1);
		ns += on_threads(ROUND, brief_main, w, sizeof w[0]);
	}
	for (size_t k = 0; k < TRANSFER; k++)
		free(transfer[k]);
	return ns / (double)(rounds * ROUND);
}

/* ---- bursts: many blocks of one size, then all freed ---- */

static double bursts(long ops)
{
	static const size_t sizes[] = {16, 32, 64, 128, 256};
	static const int lengths[] = {25, 100, 400, 1600};
	static unsigned char *live[1600];
	long pairs = 0;
	double t0 = now_ns();
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
		for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
			int n = lengths[l];
			long rounds = ops / 20 / n > 0 ? ops / 20 / n : 1;
			for (long r = 0; r < rounds; r++) {
				for (int i = 0; i < n; i++) {
					live[i] = get(sizes[s], (unsigned char)i);
					memset(live[i], (unsigned char)i, sizes[s]);
				}
				for (int i = 0; i < n / 2; i++)
					free(live[i]);
				for (int i = n - 1; i >= n / 2; i--) {
					if (live[i][sizes[s] / 2] != (unsigned char)i)
						die("a block's bytes changed");
					free(live[i]);
				}
			}
			pairs += rounds * n;
		}
	return (now_ns() - t0) / (double)pairs;
}

int main(int argc, char **argv)
{
	static const struct bench_mode modes[] = {
		{"server", server},   {"scratch", scratch}, {"grow", grow},	   {"leak", leak},
		{"batches", batches}, {"threads", threads}, {"bursts", bursts}, {"mixed", mixed}};
	BENCH_MAIN(modes, sizeof modes / sizeof modes[0], argc, argv);
}
