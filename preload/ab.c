/* Per-call A/B arms (ab.h). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../include/hugezero.h"
#include "ab.h"
#include "glibc.h"
#include "options.h"
#include "stats.h"

int hz_ab_on;
size_t hz_ab_min = (size_t)64 << 10;
const char *const hz_ab_op_names[HZ_AB_OPS] = {"memset", "calloc"};

static double share_a;         /* the probability of arm A */
static uint64_t seed;
static unsigned next_thread;
static void *(*glibc_memset)(void *, int, size_t);

static struct hz_ab_cell cells[2][HZ_AB_OPS][HZ_CLASSES];
static uint64_t hist[2][HZ_AB_OPS][HZ_CLASSES][HZ_AB_BUCKETS];
static pthread_mutex_t lock[HZ_AB_OPS] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static void ab_child(void);

void hz_ab_init(void)
{
	const struct hz_option_value *o = hz_option_values;
	if (!o[HZ_OPT_AB].set)
		return;
	char *end;
	double f = strtod(o[HZ_OPT_AB].str, &end);
	if (*end || !(f >= 0 && f <= 1)) {
		hz_log("ignoring HUGEZERO_AB: not a fraction from 0 to 1: ", o[HZ_OPT_AB].str, "");
		return;
	}
	/* glibc's memset: the next definition after this library's (in a
	 * fully static program there is none, and the arms stay off). */
	static void *next;
	glibc_memset = (void *(*)(void *, int, size_t))hz_glibc_next(&next, "memset");
	if (!glibc_memset) {
		hz_log("HUGEZERO_AB: glibc's memset not found; arms off", "", "");
		return;
	}
	share_a = f;
	seed = o[HZ_OPT_AB_SEED].set ? o[HZ_OPT_AB_SEED].size : (uint64_t)time(NULL);
	if (o[HZ_OPT_AB_MIN].set)
		hz_ab_min = o[HZ_OPT_AB_MIN].size > HZ_SMALL_MAX ? o[HZ_OPT_AB_MIN].size : HZ_SMALL_MAX + 1;
	pthread_atfork(NULL, NULL, ab_child);
	__atomic_store_n(&hz_ab_on, 1, __ATOMIC_RELEASE);
}

/* Arm A with probability share_a: a per-thread xorshift64*, seeded from
 * HUGEZERO_AB_SEED and the thread's arrival. */
static int arm_a(void)
{
	if (hz_unlikely(!rng)) {
		unsigned k = __atomic_fetch_add(&next_thread, 1, __ATOMIC_RELAXED) + 1;
		rng = (seed ^ (0x9E3779B97F4A7C15ull * k)) | 1;
	}
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	uint64_t r = rng * 0x2545F4914F6CDD1Dull;
	return (double)(r >> 11) * 0x1p-53 < share_a;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

double hz_ab_bucket_ns(int b)
{
	int maj = b / HZ_AB_H_SUB, sub = b % HZ_AB_H_SUB;
	return ldexp(1.0 + (double)sub / HZ_AB_H_SUB, maj + HZ_AB_H_LO);
}

static int bucket(double ns)
{
	if (ns < ldexp(1, HZ_AB_H_LO))
		return 0;
	int e;
	double m = frexp(ns, &e); /* ns = m * 2^e, m in [0.5, 1) */
	int maj = e - 1 - HZ_AB_H_LO, sub = (int)((m * 2 - 1) * HZ_AB_H_SUB);
	if (maj >= HZ_AB_H_MAJ)
		return HZ_AB_BUCKETS - 1;
	return maj * HZ_AB_H_SUB + sub;
}

/* Never waits: a memset in a signal handler may interrupt this very
 * function on its thread. When the lock is busy the call's figures are
 * dropped (counted in `dropped`). */
static uint64_t dropped;

static void record(int a, int op, size_t n, uint64_t t)
{
	unsigned k = hz_class(n);
	struct hz_ab_cell *c = &cells[!a][op][k];
	double ns = (double)t;
	if (pthread_mutex_trylock(&lock[op])) {
		__atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	c->calls++;
	c->bytes += n;
	c->ns += ns;
	c->ns2 += ns * ns;
	hist[!a][op][k][bucket(ns)]++;
	pthread_mutex_unlock(&lock[op]);
}

void *hz_ab_memset(void *p, int c, size_t n)
{
	int a = arm_a();
	uint64_t t0 = now_ns();
	if (a)
		glibc_memset(p, c, n);
	else
		hz_memset_exit(p, c, n);
	record(a, HZ_AB_MEMSET, n, now_ns() - t0);
	return p;
}

void *hz_ab_calloc(size_t size, void *(*alloc)(size_t, int))
{
	int a = arm_a();
	uint64_t t0 = now_ns();
	void *p = alloc(size, !a);
	if (p && a)
		glibc_memset(p, 0, size);
	if (p)
		record(a, HZ_AB_CALLOC, size, now_ns() - t0);
	return p;
}

void hz_ab_each(hz_ab_fn fn, void *arg)
{
	for (int op = 0; op < HZ_AB_OPS; op++)
		for (int k = 0; k < HZ_CLASSES; k++) {
			/* One consistent copy of the cell and its histograms. */
			static uint64_t ha[HZ_AB_BUCKETS], hb[HZ_AB_BUCKETS];
			pthread_mutex_lock(&lock[op]);
			struct hz_ab_cell a = cells[0][op][k], b = cells[1][op][k];
			memcpy(ha, hist[0][op][k], sizeof ha);
			memcpy(hb, hist[1][op][k], sizeof hb);
			pthread_mutex_unlock(&lock[op]);
			if (a.calls || b.calls)
				fn(arg, op, k, &a, &b, ha, hb);
		}
}

uint64_t hz_ab_dropped(void)
{
	return __atomic_load_n(&dropped, __ATOMIC_RELAXED);
}

/* fork: the child starts with empty arms (its report is its own), locks
 * that no thread of its holds, and a generator of its own. */
static void ab_child(void)
{
	hz_clear(cells, sizeof cells); /* the library's own: not a counted memset */
	hz_clear(hist, sizeof hist);
	dropped = 0;
	for (int op = 0; op < HZ_AB_OPS; op++)
		pthread_mutex_init(&lock[op], NULL);
	seed ^= 0x9E3779B97F4A7C15ull * (uint64_t)getpid();
	rng = 0;
}

void hz_ab_compare(const struct hz_ab_cell *a, const struct hz_ab_cell *b, struct hz_ab_result *r)
{
	memset(r, 0, sizeof *r);
	r->verdict = "not enough calls";
	if (a->calls < 2 || b->calls < 2)
		return;
	double na = (double)a->calls, nb = (double)b->calls;
	r->mean_a = a->ns / na;
	r->mean_b = b->ns / nb;
	double va = (a->ns2 - na * r->mean_a * r->mean_a) / (na - 1);
	double vb = (b->ns2 - nb * r->mean_b * r->mean_b) / (nb - 1);
	if (va < 0)
		va = 0;
	if (vb < 0)
		vb = 0;
	r->ratio = r->mean_b / r->mean_a;
	/* var(mB/mA) ~ r^2 (var(mB)/mB^2 + var(mA)/mA^2) */
	double rel = vb / (nb * r->mean_b * r->mean_b) + va / (na * r->mean_a * r->mean_a);
	double half = 1.96 * r->ratio * sqrt(rel);
	r->lo = r->ratio - half;
	r->hi = r->ratio + half;
	r->verdict = r->hi < 1 ? "B faster" : r->lo > 1 ? "B slower" : "no difference";
}

double hz_ab_quantile(const uint64_t *h, double q)
{
	uint64_t total = 0, seen = 0;
	for (int b = 0; b < HZ_AB_BUCKETS; b++)
		total += h[b];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)total);
	for (int b = 0; b < HZ_AB_BUCKETS; b++) {
		seen += h[b];
		if (seen >= want && seen)
			return b + 1 < HZ_AB_BUCKETS ? (hz_ab_bucket_ns(b) + hz_ab_bucket_ns(b + 1)) / 2
						      : hz_ab_bucket_ns(b);
	}
	return hz_ab_bucket_ns(HZ_AB_BUCKETS - 1);
}
