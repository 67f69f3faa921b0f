/* The library's counters, by name, and the report at exit. */
#ifndef HZ_STATS_H
#define HZ_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/arch.h"

/* ---- Calls and bytes per operation and size class, per thread ----
 * Each thread counts into its own block (initial-exec TLS: no lock, no
 * atomic); blocks are linked into a list the first time they count and
 * summed on report. A thread's block is folded into the process totals
 * when it exits; a forked child starts from zero. Class k (1..64) holds
 * sizes in [2^(k-1), 2^k), class 1 also the size 0 (free counts there:
 * the size of a block being freed is not looked up). memset counts sizes
 * above HZ_SMALL_MAX only: the small path stays as it is. A count made by
 * a signal handler that interrupts a count of the same thread may be lost. */
enum hz_op { HZ_OP_MALLOC, HZ_OP_CALLOC, HZ_OP_REALLOC, HZ_OP_FREE, HZ_OP_MEMSET, HZ_OPS };
#define HZ_CLASSES 65
struct hz_tstats {
	uint64_t calls[HZ_OPS][HZ_CLASSES];
	uint64_t bytes[HZ_OPS][HZ_CLASSES];
	struct hz_tstats *next;
	int state; /* 0: not linked yet, 1: linked, 2: folded at thread exit */
};
extern __thread struct hz_tstats hz_tstats __attribute__((tls_model("initial-exec"), visibility("hidden")));
HZ_HIDDEN HZ_NOINLINE void hz_tstats_link(struct hz_tstats *t);

static inline unsigned hz_class(size_t n)
{
	return 64u - (unsigned)__builtin_clzll((unsigned long long)n | 1);
}

static inline void hz_count(enum hz_op op, size_t n)
{
	struct hz_tstats *t = &hz_tstats;
	if (hz_unlikely(!t->state))
		hz_tstats_link(t);
	unsigned k = hz_class(n);
	t->calls[op][k]++;
	t->bytes[op][k] += n;
}

/* free: calls only, in class 1 (the block's size is not looked up). */
static inline void hz_count_free(void)
{
	struct hz_tstats *t = &hz_tstats;
	if (hz_unlikely(!t->state))
		hz_tstats_link(t);
	t->calls[HZ_OP_FREE][1]++;
}

/* The sums over all threads, past and present, into out. */
HZ_HIDDEN void hz_tstats_sum(struct hz_tstats *out);
extern const char *const hz_op_names[HZ_OPS];

typedef void (*hz_counter_fn)(void *arg, const char *name, uint64_t value);

/* Calls fn once per counter, in a fixed order: the engine's, the hugepage
 * arenas', then the small allocator's when the library has one. Takes the
 * arenas' locks one at a time; allocates nothing. */
__attribute__((visibility("hidden"))) void hz_counters_each(hz_counter_fn fn, void *arg);

/* The small allocator's counters (preload/malloc.c defines it; a program
 * linked with the engine alone has none). */
__attribute__((visibility("hidden"), weak)) void hz_small_counters(hz_counter_fn fn, void *arg);

/* Takes HUGEZERO_STATS from the loaded options (initialisation). */
__attribute__((visibility("hidden"))) void hz_stats_init(void);

/* Writes every counter as "name value" lines to fd; 0, or -1 when a
 * write failed. */
__attribute__((visibility("hidden"))) int hz_stats_write(int fd);

#endif
