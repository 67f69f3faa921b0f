/* The counters: calls and bytes per operation and size class, counted by
 * each thread into its own block; and what the engine cleared, per kernel,
 * in process-wide atomics. */
#ifndef HZ_COUNTERS_H
#define HZ_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/arch.h"
#include "obs.h"

#pragma GCC visibility push(hidden)

/* ---- the counts, per thread ----
 * Each thread counts into its own block (initial-exec TLS: no lock, no
 * atomic, so no count waits for the stores of the clear before it to
 * drain); blocks are linked into a list the first time they count and
 * summed on report. A thread's block is folded into the process totals
 * when it exits; a forked child starts from zero. Calls and bytes per
 * operation and size class: class k (1..64) holds sizes in
 * [2^(k-1), 2^k), class 1 also the size 0 (free counts there: the size of
 * a block being freed is not looked up). memset counts sizes above
 * HZ_FRONT_MAX only: the small path stays as it is. Then what the engine
 * cleared, per kernel (fills of at least HZ_COUNT_MIN bytes). A count
 * made by a signal handler that interrupts a count of the same thread may
 * be lost. */
enum hz_op { HZ_OP_MALLOC, HZ_OP_CALLOC, HZ_OP_REALLOC, HZ_OP_FREE, HZ_OP_MEMSET, HZ_OPS };
#define HZ_CLASSES 65
struct hz_tstats {
	uint64_t calls[HZ_OPS][HZ_CLASSES];
	uint64_t bytes[HZ_OPS][HZ_CLASSES];
	uint64_t kcalls[HZ_MAX_KERNELS], kbytes[HZ_MAX_KERNELS]; /* fills per kernel */
	uint64_t memset_chk_calls; /* __memset_chk of at least HZ_COUNT_MIN */
	uint64_t hinted_calls;     /* hinted clears that had a hint */
	struct hz_tstats *next;
	int state; /* 0: not linked yet, 1: linked, 2: folded at thread exit */
};
extern HZ_TLS struct hz_tstats hz_tstats;
HZ_NOINLINE void hz_tstats_link(struct hz_tstats *t);
extern const char *const hz_op_names[HZ_OPS];

/* This thread's block, linked (the first count of a thread links it). */
static inline struct hz_tstats *hz_tstats_mine(void)
{
	struct hz_tstats *t = &hz_tstats;
	if (hz_unlikely(!t->state))
		hz_tstats_link(t);
	return t;
}

static inline unsigned hz_class(size_t n)
{
	return 64u - (unsigned)__builtin_clzll((unsigned long long)n | 1);
}

/* The smallest size in class k. */
static inline uint64_t hz_class_min(int k)
{
	return k <= 1 ? 0 : (uint64_t)1 << (k - 1);
}

static inline void hz_count(enum hz_op op, size_t n)
{
	struct hz_tstats *t = hz_tstats_mine();
	unsigned k = hz_class(n);
	t->calls[op][k]++;
	t->bytes[op][k] += n;
}

/* free: calls only, in class 1 (the block's size is not looked up). */
static inline void hz_count_free(void)
{
	struct hz_tstats *t = hz_tstats_mine();
	t->calls[HZ_OP_FREE][1]++;
}

/* The sums over all threads, past and present, into out. */
void hz_tstats_sum(struct hz_tstats *out);

/* Fills of at least HZ_COUNT_MIN bytes are counted per kernel. */
#define HZ_COUNT_MIN ((size_t)64 << 10)

static inline void hz_count_kernel(unsigned k, size_t n)
{
	if (n >= HZ_COUNT_MIN) {
		struct hz_tstats *t = hz_tstats_mine();
		t->kcalls[k]++;
		t->kbytes[k] += n;
	}
}

/* The engine's fill and hinted clear, counted: every clear the library
 * runs for the program goes through these, so the kernel figures cover
 * memset, calloc and the public clears alike. */
static inline void *hz_fill_counted(void *p, int c, size_t n)
{
	unsigned k = hz_policy_pick(&hz_policy, c, n);
	hz_count_kernel(k, n);
	hz_fill(k, p, c, n);
	return p;
}

static inline void *hz_zero_hinted_counted(void *p, size_t n, const void *hint)
{
	struct hz_section s[3];
	unsigned k = hz_zero_hinted(p, n, hint, s);
	if (k > 1 && n >= HZ_COUNT_MIN)
		hz_tstats_mine()->hinted_calls++;
	for (unsigned i = 0; i < k; i++)
		hz_count_kernel(s[i].kernel, s[i].len);
	return p;
}

/* Starts the per-thread blocks' exit handling (the library's
 * initialisation, before threads are made). */
void hz_counters_setup(void);
/* fork (hz_obs_fork_*): the blocks' lock around it; the child counts
 * from zero, with only its own thread's block. */
void hz_counters_fork_prepare(void);
void hz_counters_fork_parent(void);
void hz_counters_fork_child(void);

#pragma GCC visibility pop

#endif
