/* Per-call A/B arms (ab.c): the assignment, the records, the fork; their
 * statistics (histogram buckets, quantiles and the B/A interval), pure
 * functions of their arguments. No libm: ldexp and frexp are libc's, the
 * square root the instruction (-fno-math-errno), so a program that does
 * not load libm does not load it for the library. */
#include <math.h>
#include <pthread.h>

#include "../os/os.h"
#include "../arch/arch.h"
#include "obs.h"

int hz_ab_on;
size_t hz_ab_min;
const char *const hz_ab_op_names[HZ_AB_OPS] = {"memset", "calloc"};

static double share_a; /* the probability of arm A */
static uint64_t seed;
static unsigned next_thread;

/* The arms' records, 270 KiB: mapped when the arms are set up, so that a
 * process that does not use them (most) has not that much less address
 * space under a limit. */
static struct tables {
	struct hz_ab_cell cells[2][HZ_AB_OPS][HZ_CLASSES];
	uint64_t hist[2][HZ_AB_OPS][HZ_CLASSES][HZ_AB_BUCKETS];
} *tab;
static pthread_mutex_t lock[HZ_AB_OPS] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

static HZ_TLS uint64_t rng;

int hz_ab_setup(double share, uint64_t s, size_t min)
{
	void *m;
	if (hz_os_map(hz_round_up(sizeof *tab, hz_page_size), hz_page_size, &m))
		return -1;
	tab = m;
	share_a = share;
	seed = s;
	hz_ab_min = min;
	__atomic_store_n(&hz_ab_on, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Arm A with probability share_a: a per-thread xorshift64*, seeded from
 * the seed and the thread's arrival. */
int hz_ab_pick(void)
{
	if (hz_unlikely(!rng)) {
		unsigned k = __atomic_fetch_add(&next_thread, 1, __ATOMIC_RELAXED) + 1;
		rng = (seed ^ (0x9E3779B97F4A7C15ull * k)) | 1;
	}
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	uint64_t r = rng * 0x2545F4914F6CDD1Dull;
	return (double)(r >> 11) * 0x1p-53 < share_a ? HZ_AB_A : HZ_AB_B;
}

int hz_ab_process_off(double share_off, uint64_t seed)
{
	/* Nearby seeds (1, 2, 3 in a test) give unrelated draws. */
	uint64_t z = hz_os_mix64(seed + 0x9E3779B97F4A7C15ull);
	return (double)(z >> 11) * 0x1p-53 < share_off;
}

/* Never waits: a memset in a signal handler may interrupt this very
 * function on its thread. When the lock is busy the call's figures are
 * dropped (counted in `dropped`). */
static uint64_t dropped;

void hz_ab_record(int op, int arm, size_t n, uint64_t t)
{
	unsigned k = hz_class(n);
	int b = arm == HZ_AB_B;
	struct hz_ab_cell *c = &tab->cells[b][op][k];
	double ns = (double)t;
	if (pthread_mutex_trylock(&lock[op])) {
		__atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	c->calls++;
	c->bytes += n;
	c->ns += ns;
	c->ns2 += ns * ns;
	tab->hist[b][op][k][hz_ab_bucket(ns)]++;
	pthread_mutex_unlock(&lock[op]);
}

int hz_ab_next(struct hz_ab_cursor *c)
{
	while (tab && c->op < HZ_AB_OPS) {
		if (++c->cls == HZ_CLASSES) {
			c->cls = -1;
			c->op++;
			continue;
		}
		int op = c->op, k = c->cls;
		pthread_mutex_lock(&lock[op]);
		c->a = tab->cells[0][op][k];
		c->b = tab->cells[1][op][k];
		for (int i = 0; i < HZ_AB_BUCKETS; i++)
			c->hist_a[i] = tab->hist[0][op][k][i], c->hist_b[i] = tab->hist[1][op][k][i];
		pthread_mutex_unlock(&lock[op]);
		if (c->a.calls || c->b.calls)
			return 1;
	}
	return 0;
}

uint64_t hz_ab_dropped(void)
{
	return __atomic_load_n(&dropped, __ATOMIC_RELAXED);
}

/* fork: the child starts with empty arms (its report is its own), locks
 * that no thread of its holds, and a generator of its own. */
void hz_ab_fork_child(void)
{
	if (tab)
		hz_memzero(tab, sizeof *tab);
	dropped = 0;
	for (int op = 0; op < HZ_AB_OPS; op++)
		pthread_mutex_init(&lock[op], NULL);
	seed ^= 0x9E3779B97F4A7C15ull * (uint64_t)hz_os_pid();
	rng = 0;
}

/* ---- the statistics ---- */

double hz_ab_bucket_ns(int b)
{
	int maj = b / HZ_AB_H_SUB, sub = b % HZ_AB_H_SUB;
	return ldexp(1.0 + (double)sub / HZ_AB_H_SUB, maj + HZ_AB_H_LO);
}

int hz_ab_bucket(double ns)
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

void hz_ab_compare(const struct hz_ab_cell *a, const struct hz_ab_cell *b, struct hz_ab_result *r)
{
	*r = (struct hz_ab_result){0, 0, 0, 0, 0, "not enough calls"};
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
	double half = 1.96 * r->ratio * __builtin_sqrt(rel);
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
	double x = q * (double)total; /* ceil, for 0 <= x <= total */
	uint64_t want = (uint64_t)x;
	want += (double)want < x;
	for (int b = 0; b < HZ_AB_BUCKETS; b++) {
		seen += h[b];
		if (seen >= want && seen)
			return b + 1 < HZ_AB_BUCKETS ? (hz_ab_bucket_ns(b) + hz_ab_bucket_ns(b + 1)) / 2
						      : hz_ab_bucket_ns(b);
	}
	return hz_ab_bucket_ns(HZ_AB_BUCKETS - 1);
}
