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
 * KiB, a moving average, zero and non-zero fills apart) and takes the
 * cheapest, trying another now and then so that a change is seen; every
 * arm is tried first (see hz_learn_arm). Races between threads only blur an average. */
#include "arch.h"

#define FIRST 22    /* log2(HZ_LEARN_MIN) */
#define SAMPLES 3   /* each arm's samples before the averages decide */
#define EXPLORE 256 /* then two calls in EXPLORE take another arm, */
#define SURE 4096   /* or in SURE once the best costs half the next */

struct hz_learn hz_learn[2][HZ_LEARN_CLASSES];

/* Half octaves: [2^b, 1.5 x 2^b) and [1.5 x 2^b, 2^(b+1)) from 4 MiB. */
static unsigned class_of(size_t n)
{
	unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)n);
	if (b < FIRST)
		return 0;
	unsigned k = 2 * (b - FIRST) + (unsigned)(n >> (b - 1) & 1);
	return k < HZ_LEARN_CLASSES ? k : HZ_LEARN_CLASSES - 1;
}

static struct hz_learn *entry(int c, size_t n)
{
	return &hz_learn[(unsigned char)c != 0][class_of(n)];
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

/* A sample counts only when the class's fill before it took the same
 * arm: after streaming stores the cache holds none of the buffer, after
 * cached ones it holds the last of it, and the first fill after a switch
 * pays for what the other arm left. So arms are tried in runs (SAMPLES + 1
 * calls each, then two calls at a time), and the cached arm (0) keeps the
 * class unless another costs a tenth less: what it leaves in cache the
 * program reads after, which no timing here sees. */
int hz_learn_arm(int c, size_t n)
{
	struct hz_learn *l = entry(c, n);
	int arms = hz_learn_arms(c), best = 0;
	uint32_t calls = __atomic_fetch_add(&l->calls, 1, __ATOMIC_RELAXED);
	for (int a = 0; a < arms; a++)
		if (__atomic_load_n(&l->n[a], __ATOMIC_RELAXED) < SAMPLES)
			return (int)(calls / (SAMPLES + 1) % (unsigned)arms);
	uint64_t cost[HZ_LEARN_ARMS], next = UINT64_MAX;
	for (int a = 0; a < arms; a++)
		cost[a] = __atomic_load_n(&l->cost[a], __ATOMIC_RELAXED);
	for (int a = 1; a < arms; a++)
		if (cost[a] * 10 < cost[best] * 9)
			best = a;
	for (int a = 0; a < arms; a++)
		if (a != best && cost[a] < next)
			next = cost[a];
	uint32_t every = cost[best] * 2 <= next ? SURE : EXPLORE;
	if (calls % every >= 2)
		return best;
	return (int)((unsigned)best + 1 + (calls / every) % (unsigned)(arms - 1)) % arms; /* another, in turn */
}

void hz_learn_record(int c, size_t n, int arm, uint64_t ticks)
{
	struct hz_learn *l = entry(c, n);
	if (__atomic_exchange_n(&l->last, (uint32_t)arm + 1, __ATOMIC_RELAXED) != (uint32_t)arm + 1)
		return; /* the class's first fill, or the first after a switch */
	uint64_t per_kib = ticks / (n >> 10 ? n >> 10 : 1);
	uint32_t cost = per_kib >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)per_kib + 1;
	uint32_t old = __atomic_load_n(&l->cost[arm], __ATOMIC_RELAXED);
	/* The first sample as it is, then a quarter of each new one. */
	uint32_t avg = old ? (uint32_t)(((uint64_t)old * 3 + cost) / 4) : cost;
	__atomic_store_n(&l->cost[arm], avg, __ATOMIC_RELAXED);
	__atomic_fetch_add(&l->n[arm], 1, __ATOMIC_RELAXED);
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
	int arm = hz_learn_arm(c, n);
	unsigned k = hz_learn_kernel(c, arm);
	uint64_t t0 = hz_arch_ticks();
	hz_fill(k, p, c, n);
	hz_learn_record(c, n, arm, hz_arch_ticks() - t0);
	return k;
}
