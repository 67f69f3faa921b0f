/* allocator/claim.h: the zeroer's claim, the one piece of free memory it
 * works on at a time, and the protocol with the threads that hand memory
 * out. A piece is pages [lo, hi) of a chunk within one huge page (to
 * clear, or to populate: the reserve), or [off, off + len) of a cached
 * dirty huge block. Set and ended under its arena's lock; `taken` is also
 * read between the zeroer's steps without it. A thread that hands out or
 * unmaps memory of the piece marks it taken (hz_claim_collide) and, for a
 * clear, waits on its arena's condition until the claim ends (arena.h).
 * The protocol in full: docs/design.md, "The background zeroer". Calls
 * chunk.h and huge.h. */
#ifndef HZ_CLAIM_H
#define HZ_CLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "chunk.h"
#include "huge.h"

#pragma GCC visibility push(hidden)

struct hz_arena; /* the claim names its arena, which it never calls */

struct hz_claim {
	struct hz_arena *a;      /* NULL: no piece (read atomically) */
	struct hz_chunk *c;      /* pages [lo, hi) of c ... */
	size_t lo, hi;
	struct hz_huge *h;       /* ... or [off, off + len) of the cached block h */
	size_t off, len;
	size_t extent;           /* the dirty memory at hand when claimed: the kernel's size */
	int populate;            /* MADV_POPULATE_WRITE, which changes no byte */
	int taken;               /* handed out or unmapped meanwhile: not to be published */
	int checked;             /* after a fork: alone says which pages are this process's only */
	uint64_t step_at;        /* when the zeroer began its current step (read without the lock) */
	uint64_t alone[8];
};
extern struct hz_claim hz_claim;

/* Claims a piece in arena a (its lock held): chunk pages [lo, hi) of c,
 * or with c NULL [off, off + len) of h. */
void hz_claim_set(struct hz_arena *a, struct hz_chunk *c, size_t lo, size_t hi, struct hz_huge *h,
		  size_t off, size_t len, int populate);
/* Whether page i of the piece is this process's alone (always, unless
 * checked after a fork). */
static inline int hz_claim_alone(size_t i)
{
	return !hz_claim.checked || (hz_claim.alone[i / 64] >> (i % 64) & 1);
}
/* What ending the claim did with the piece. */
enum hz_claim_end { HZ_CLAIM_ABANDONED, HZ_CLAIM_PUBLISHED, HZ_CLAIM_SHARED };
/* Ends the claim (a's lock held) after `done` bytes: published as clean
 * (chunk pages this process maps alone; the others marked shared), unless
 * taken. The caller then wakes who waits on the arena's condition. */
enum hz_claim_end hz_claim_end(size_t done);
/* No piece: c's busy range cleared (the end, and a forked child). */
void hz_claim_reset(void);

/* ---- the allocator's side, the arena's lock held ---- */

/* Whether the claim is in a and overlaps chunk c's pages [lo, hi) (with
 * c NULL: is the cached block h). */
int hz_claim_overlaps(const struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		      const struct hz_huge *h);
/* Before such memory is handed out: an overlapping claim marked taken;
 * 1 when the caller must wait for its end (a clear, which writes), 0
 * otherwise (no overlap, or a population, which changes no byte). */
int hz_claim_collide(const struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		     const struct hz_huge *h);
/* Whether a piece of a is claimed; marked taken when one is (trim). */
int hz_claim_busy(const struct hz_arena *a);
/* Whether the cached block h of a is claimed: not to be unmapped. */
int hz_claim_holds(const struct hz_arena *a, const struct hz_huge *h);

/* Whether a clear claimed in a has made no step for HZ_CLAIM_STALL_NS:
 * its thread, at SCHED_IDLE, gets no CPU (every core busy). A thread
 * then takes other pages, fresh ones even, rather than wait for it (a
 * lock's holder preempted, the classic inversion, unbounded). */
#define HZ_CLAIM_STALL_NS ((uint64_t)1000000u)
static inline int hz_claim_stalled(const struct hz_arena *a)
{
	return __atomic_load_n(&hz_claim.a, __ATOMIC_RELAXED) == a && !hz_claim.populate &&
	       hz_os_now_ns() - __atomic_load_n(&hz_claim.step_at, __ATOMIC_RELAXED) > HZ_CLAIM_STALL_NS;
}

/* Handouts that waited for a piece. */
extern uint64_t hz_claim_waits;

#pragma GCC visibility pop

#endif
