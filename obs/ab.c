/* Per-call A/B arms (ab.h): the assignment, the records, the fork. */
#include <pthread.h>

#include "../os/os.h"
#include "../arch/arch.h"
#include "ab.h"
#include "counters.h"

int hz_ab_on;
size_t hz_ab_min;
const char *const hz_ab_op_names[HZ_AB_OPS] = {"memset", "calloc"};

static double share_a; /* the probability of arm A */
static uint64_t seed;
static unsigned next_thread;

static struct hz_ab_cell cells[2][HZ_AB_OPS][HZ_CLASSES];
static uint64_t hist[2][HZ_AB_OPS][HZ_CLASSES][HZ_AB_BUCKETS];
static pthread_mutex_t lock[HZ_AB_OPS] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

static HZ_TLS uint64_t rng;

void hz_ab_setup(double share, uint64_t s, size_t min)
{
	share_a = share;
	seed = s;
	hz_ab_min = min;
	__atomic_store_n(&hz_ab_on, 1, __ATOMIC_RELEASE);
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

/* Never waits: a memset in a signal handler may interrupt this very
 * function on its thread. When the lock is busy the call's figures are
 * dropped (counted in `dropped`). */
static uint64_t dropped;

void hz_ab_record(int op, int arm, size_t n, uint64_t t)
{
	unsigned k = hz_class(n);
	int b = arm == HZ_AB_B;
	struct hz_ab_cell *c = &cells[b][op][k];
	double ns = (double)t;
	if (pthread_mutex_trylock(&lock[op])) {
		__atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	c->calls++;
	c->bytes += n;
	c->ns += ns;
	c->ns2 += ns * ns;
	hist[b][op][k][hz_ab_bucket(ns)]++;
	pthread_mutex_unlock(&lock[op]);
}

void hz_ab_each(hz_ab_fn fn, void *arg)
{
	for (int op = 0; op < HZ_AB_OPS; op++)
		for (int k = 0; k < HZ_CLASSES; k++) {
			/* One consistent copy of the cell and its histograms. */
			static uint64_t ha[HZ_AB_BUCKETS], hb[HZ_AB_BUCKETS];
			pthread_mutex_lock(&lock[op]);
			struct hz_ab_cell a = cells[0][op][k], b = cells[1][op][k];
			for (int i = 0; i < HZ_AB_BUCKETS; i++)
				ha[i] = hist[0][op][k][i], hb[i] = hist[1][op][k][i];
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
void hz_ab_fork_child(void)
{
	hz_fill_policy(cells, 0, sizeof cells);
	hz_fill_policy(hist, 0, sizeof hist);
	dropped = 0;
	for (int op = 0; op < HZ_AB_OPS; op++)
		pthread_mutex_init(&lock[op], NULL);
	seed ^= 0x9E3779B97F4A7C15ull * (uint64_t)hz_os_pid();
	rng = 0;
}
