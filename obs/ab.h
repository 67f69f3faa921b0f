/* Per-call A/B arms: each eligible call (memset, and every zeroed arena
 * block: calloc, mallocx with MALLOCX_ZERO, from a minimum size) goes at
 * random to arm A, the baseline (glibc's memset; for a zeroed block, the
 * block cleared whole by glibc's memset, as glibc's allocator clears
 * memory it recycles), or to arm B, hugezero's own path. Both give the same bytes. Each arm records per size class
 * calls, bytes, time and a latency histogram; the report gives their
 * means, percentiles, throughput and the B/A ratio of mean times with a
 * 95% confidence interval and a verdict. Recording never waits for its
 * lock (it drops the call's figures instead); a forked child starts with
 * empty arms. */
#ifndef HZ_AB_H
#define HZ_AB_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

enum hz_ab_op { HZ_AB_MEMSET, HZ_AB_CALLOC, HZ_AB_OPS };
extern const char *const hz_ab_op_names[HZ_AB_OPS];

/* Set once by hz_ab_setup: 1 when the arms run. */
extern int hz_ab_on;
extern size_t hz_ab_min;

/* Starts the arms: share_a (0 to 1) of eligible calls from min bytes go
 * to arm A; seed makes the assignment repeatable. At initialisation,
 * before threads are made. */
void hz_ab_setup(double share_a, uint64_t seed, size_t min);

/* The arms decide nothing and call nothing: the caller asks which arm a
 * call takes, makes the call that arm stands for (A: the baseline, glibc's
 * way; B: hugezero's), and records how long it took. */
enum hz_ab_arm { HZ_AB_NONE, HZ_AB_A, HZ_AB_B };
HZ_NOINLINE int hz_ab_pick(void);
/* The arm of an op call of size bytes: HZ_AB_NONE when the arms are off
 * or the call is below their minimum (one load and a branch). */
static inline int hz_ab_arm(int op, size_t size)
{
	(void)op;
	if (hz_likely(!__atomic_load_n(&hz_ab_on, __ATOMIC_RELAXED)) || size < hz_ab_min)
		return HZ_AB_NONE;
	return hz_ab_pick();
}
/* Records a call of arm (HZ_AB_A or HZ_AB_B) for op: n bytes in ns
 * nanoseconds. Never waits (see hz_ab_dropped). */
void hz_ab_record(int op, int arm, size_t n, uint64_t ns);

/* Latency histogram: log-linear buckets over nanoseconds, HZ_AB_H_SUB a
 * power of two, from 2^HZ_AB_H_LO ns. */
#define HZ_AB_H_LO 6
#define HZ_AB_H_MAJ 32
#define HZ_AB_H_SUB 4
#define HZ_AB_BUCKETS (HZ_AB_H_MAJ * HZ_AB_H_SUB)

/* One arm's figures for one operation and size class. */
struct hz_ab_cell {
	uint64_t calls, bytes;
	double ns, ns2; /* sum of times and of their squares */
};
/* The arms' cells in use, one at a time, each a consistent copy of its
 * figures and histograms: start from HZ_AB_CURSOR; hz_ab_next returns 0
 * past the last. */
struct hz_ab_cursor {
	int op, cls;
	struct hz_ab_cell a, b;
	uint64_t hist_a[HZ_AB_BUCKETS], hist_b[HZ_AB_BUCKETS];
};
#define HZ_AB_CURSOR {0, -1, {0, 0, 0, 0}, {0, 0, 0, 0}, {0}, {0}}
int hz_ab_next(struct hz_ab_cursor *c);
/* Calls whose figures were dropped: the arms' lock was busy (a signal
 * handler interrupting a record on its own thread). */
uint64_t hz_ab_dropped(void);

/* ---- the statistics ---- */

/* The lower bound, in ns, of bucket b. */
double hz_ab_bucket_ns(int b);
/* The bucket a time of ns nanoseconds falls in (the first below its
 * range, the last above it). */
int hz_ab_bucket(double ns);

/* Means, and the B/A ratio of mean times with its 95% interval by the
 * delta method; verdict "B faster" (the interval below 1), "B slower"
 * (above), "no difference", or "not enough calls" (fewer than 2 an arm:
 * then every figure is 0). */
struct hz_ab_result {
	double mean_a, mean_b, ratio, lo, hi;
	const char *verdict;
};
void hz_ab_compare(const struct hz_ab_cell *a, const struct hz_ab_cell *b,
			     struct hz_ab_result *r);
/* The q-quantile (0..1) of a histogram, in ns: the midpoint of the bucket
 * it falls in; 0 for an empty histogram. */
double hz_ab_quantile(const uint64_t *hist, double q);

/* fork (hz_obs_fork_child): the child's arms start empty, with a seed
 * of their own. */
void hz_ab_fork_child(void);

#pragma GCC visibility pop

#endif
