/* The streaming tier's boundary, learnt as the program runs (learn.c).
 *
 * Whether a large fill is faster with the cached tier's kernel (string
 * stores) or the streaming tier's (streaming stores, CLZERO for zero)
 * depends on how much of the last-level cache this core really gets and
 * on the memory behind it, which a virtual machine does not tell: one
 * reported a 480 MiB L3 to 2 cores, and the cached kernel wrote 9 GB/s at
 * 64-384 MiB where streaming stores wrote 17; on Zen 5, CLZERO wrote 51-78
 * GB/s at 32-256 MiB where streaming stores wrote 88. So from HZ_LEARN_MIN
 * each half-octave size class keeps what each arm has cost it (ticks per
 * KiB, the least of its last three, zero and non-zero fills apart)
 * and takes the cheapest, trying another now and then so that a change
 * is seen; every arm is tried first (see hz_learn_arm). Races between
 * threads only blur the samples. */
#include "arch.h"

#define FIRST 22    /* log2(HZ_LEARN_MIN) */
#define SAMPLES HZ_LEARN_KEPT /* each arm's samples before they decide */
#define WARM 4      /* fills of an arm in a row before the next is a sample */
#define RUN 8       /* calls of an arm in a row: while learning, and each look at another */
#define EXPLORE 512 /* once learnt, RUN calls in EXPLORE take another arm, */
#define SURE 4096   /* or in SURE once the best costs half the next */

struct hz_learn hz_learn[HZ_LEARN_WAYS][2][HZ_LEARN_CLASSES];

/* Half octaves: [2^b, 1.5 x 2^b) and [1.5 x 2^b, 2^(b+1)) from 4 MiB. */
static unsigned class_of(size_t n)
{
	unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)n);
	if (b < FIRST)
		return 0;
	unsigned k = 2 * (b - FIRST) + (unsigned)(n >> (b - 1) & 1);
	return k < HZ_LEARN_CLASSES ? k : HZ_LEARN_CLASSES - 1;
}

static struct hz_learn *entry(int way, int c, size_t n)
{
	return &hz_learn[way][(unsigned char)c != 0][class_of(n)];
}

int hz_learn_arms(int c)
{
	return !(unsigned char)c && hz_policy.zero[2] != hz_policy.fill[2] ? 3 : 2;
}

unsigned hz_learn_kernel(int c, int a)
{
	if (a == 2)
		return hz_policy.fill[2];
	return (unsigned char)c ? hz_policy.fill[1 + a] : hz_policy.zero[1 + a];
}

/* The least of an arm's kept samples: what it costs when nothing is in
 * its way. A fill is only ever slowed, by an interrupt or a stall (a
 * virtual machine's, 1 ms and more) or by a cache still cold (a cached
 * kernel's first fills of a size the cache holds), so neither decides;
 * an arm that got dearer for good shows it within three samples. */
static uint64_t least_kept(const uint32_t *k)
{
	uint32_t least = UINT32_MAX;
	for (int i = 0; i < HZ_LEARN_KEPT; i++) {
		uint32_t v = __atomic_load_n(&k[i], __ATOMIC_RELAXED);
		if (v && v < least)
			least = v;
	}
	return least;
}

/* The class's cheapest arm by its samples' least (the cached arm unless
 * another costs a fifth less), with its cost and the next cheapest one;
 * -1 while an arm has fewer than SAMPLES. */
static int cheapest(const struct hz_learn *l, int arms, uint64_t *best_cost, uint64_t *next_cost)
{
	uint64_t cost[HZ_LEARN_ARMS];
	int best = 0;
	for (int a = 0; a < arms; a++) {
		if (__atomic_load_n(&l->n[a], __ATOMIC_RELAXED) < SAMPLES)
			return -1;
		cost[a] = least_kept(l->kept[a]);
	}
	for (int a = 1; a < arms; a++)
		if (cost[a] * 5 < cost[best] * 4)
			best = a;
	uint64_t next = UINT64_MAX;
	for (int a = 0; a < arms; a++)
		if (a != best && cost[a] < next)
			next = cost[a];
	*next_cost = next;
	*best_cost = cost[best];
	return best;
}

/* A sample counts only after WARM fills of the same arm in a row: after
 * streaming stores the cache holds none of the buffer, after cached ones
 * it holds the last of it, and the first fills after a switch pay for
 * what the other arm left; a cached kernel's first few fills of a size
 * the cache can hold find it partly cold (128 MiB split over two cores of
 * a virtual machine: 7 ms, then 4 by the fifth). So arms are tried in
 * runs of RUN calls, the cached arm's first, until every arm has its
 * samples; then another arm now and then, again for RUN calls, after
 * which the best arm's own first fills back are not samples either. The
 * cached arm (0) keeps the class unless another costs a fifth less: what
 * it leaves in cache the program reads after, which no timing here sees. */
int hz_learn_arm(int way, int c, size_t n)
{
	struct hz_learn *l = entry(way, c, n);
	int arms = hz_learn_arms(c);
	uint32_t calls = __atomic_fetch_add(&l->calls, 1, __ATOMIC_RELAXED);
	uint64_t cost, next;
	int best = cheapest(l, arms, &cost, &next);
	if (best < 0)
		return (int)(calls / RUN % (unsigned)arms);
	uint32_t every = cost * 2 <= next ? SURE : EXPLORE;
	if (calls % every >= RUN)
		return best;
	return (int)((unsigned)best + 1 + (calls / every) % (unsigned)(arms - 1)) % arms; /* another, in turn */
}

unsigned hz_learn_best(int way, int c, size_t n)
{
	uint64_t cost, next;
	int best = cheapest(entry(way, c, n), hz_learn_arms(c), &cost, &next);
	return best < 0 ? hz_policy_pick(&hz_policy, c, n) : hz_learn_kernel(c, best);
}

void hz_learn_record(int way, int c, size_t n, int arm, uint64_t ticks)
{
	struct hz_learn *l = entry(way, c, n);
	uint32_t a = (uint32_t)arm + 1, streak = 0;
	if (__atomic_exchange_n(&l->last, a, __ATOMIC_RELAXED) == a)
		streak = __atomic_add_fetch(&l->streak, 1, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&l->streak, 0, __ATOMIC_RELAXED);
	if (streak < WARM)
		return; /* the class's first fills, or the first after a switch */
	uint64_t per_kib = ticks / (n >> 10 ? n >> 10 : 1);
	uint32_t cost = per_kib >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)per_kib + 1;
	uint32_t i = __atomic_fetch_add(&l->n[arm], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&l->kept[arm][i % HZ_LEARN_KEPT], cost, __ATOMIC_RELAXED);
}

static int stopped;

void hz_learn_stop(void)
{
	__atomic_store_n(&stopped, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&hz_policy.learn, 0, __ATOMIC_SEQ_CST);
}

int hz_learn_stopped(void)
{
	return __atomic_load_n(&stopped, __ATOMIC_SEQ_CST);
}

unsigned hz_learn_fill(void *p, int c, size_t n)
{
	int arm = hz_learn_arm(HZ_LEARN_ALONE, c, n);
	unsigned k = hz_learn_kernel(c, arm);
	uint64_t t0 = hz_arch_ticks();
	hz_fill(k, p, c, n);
	hz_learn_record(HZ_LEARN_ALONE, c, n, arm, hz_arch_ticks() - t0);
	return k;
}
