/* allocator/budget.h: the dirty budget, what free memory an arena keeps
 * and for how long, and what goes back to the kernel first: least
 * recently freed first, a cached huge block unmapped or a chunk's whole
 * free 2 MiB blocks released in one batch (purge.h), never splitting a
 * huge page; partial ones stay until malloc_trim. Also the reserve's
 * size, which the zeroer fills (work.h). In a memory cgroup both are
 * fitted to its limit. */
#ifndef HZ_BUDGET_H
#define HZ_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

#pragma GCC visibility push(hidden)

/* Free bytes in memory an arena keeps (chunk pages and cached huge blocks
 * alike), and how long; the reserve: bytes of free clean pages across the
 * arenas the zeroer keeps. */
extern size_t hz_budget_dirty_max;
extern uint64_t hz_budget_decay_ns;
extern size_t hz_budget_reserve_max;

/* As configured (at setup, before any block); then fitted to the limits
 * by hz_budget_fit. */
void hz_budget_setup(size_t dirty_max, uint64_t decay_ms, size_t reserve);
/* The budget and the reserve within the memory cgroup's limit as it is
 * now (hz_limits.cgroup), and, with hz_huge_fitted, at most 16 MiB kept
 * free and no reserve: in a cgroup the dirty budget is at most an eighth
 * of its limit and the reserve a thirty-second. Returns the limit fitted
 * to. */
size_t hz_budget_fit(void);
/* No reserve from now on, whatever the limits (the kernel cannot
 * populate: no MADV_POPULATE_WRITE before Linux 5.14). */
void hz_budget_no_reserve(void);

/* After a free or at the decay's tick (lock held): over hz_budget_dirty_max,
 * free memory goes back to the kernel, least recently freed first; and at
 * the end of each window of hz_budget_decay_ns, the least free memory the
 * arena held during it (its low-water mark, which no allocation needed),
 * so that memory the program frees and asks for again is kept, and an
 * idle program's goes back. */
void hz_budget_bound(struct hz_arena *a);
/* Releases all the arena's free memory in memory, partial huge pages
 * included, and unmaps every cached huge block, once the zeroer's claim
 * in a has ended (lock held); the reserve is not refilled until blocks
 * are taken fresh again. Returns the bytes. */
size_t hz_budget_trim(struct hz_arena *a);

#pragma GCC visibility pop

#endif
