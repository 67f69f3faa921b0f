/* The background zeroer: a thread of the process that clears the arenas'
 * freed memory and keeps a reserve of fresh pages in memory, so that a
 * later calloc finds them zero and a later large allocation takes no page
 * fault on the program's thread. Its work stays in the program's own
 * cgroup, charged to it, and at SCHED_IDLE (nice 19 where that is
 * refused) it takes only CPU time the program leaves.
 *
 * It starts at the first large free or large calloc (never in a program
 * that makes only small allocations), from the allocator's own call with
 * no lock of the library held, once the library's constructor has run and
 * before its destructor: never while the dynamic loader starts the
 * program, never once exit has reached the library. It ends a second
 * after it has nothing left to do, the decay included (it runs the decay
 * every 250 ms while the arenas hold free memory, so an idle process gives
 * its memory back), and the next large free starts another:
 * whichever thread of a process exits last tears its memory down, slowly
 * at SCHED_IDLE on a busy machine, so an idle process keeps none. A child
 * of fork has none until it has lived a second (one that frees and exits
 * at once has no use for it). At exit the library asks it to end and
 * waits at most 20 ms; nothing else is torn down, and the thread holds no
 * lock across a clear.
 *
 * The protocol, one piece of work at a time (at most one huge page):
 *  1. Under the arena lock the zeroer claims a piece: free dirty pages of
 *     one chunk within one huge page (to clear), free pages not in memory
 *     (to populate, the reserve), or the next 2 MiB of a cached dirty huge
 *     block. The pages stay free and dirty in the chunk's bitmaps (so a
 *     calloc that takes them clears them itself), the purge skips the
 *     piece's huge page, and no cached block is unmapped while claimed.
 *  2. Outside the lock it clears the piece in steps of 256 KiB with the
 *     streaming kernel, checking before each step whether the piece was
 *     taken; or populates it with MADV_POPULATE_WRITE, which never
 *     changes a byte.
 *  3. Under the lock again it publishes the piece as clean (known zero),
 *     unless it was taken, ends the claim and wakes who waits for it.
 * A thread that hands out memory of a claimed piece (a block, a resized
 * block's new pages, a cached huge block) or unmaps it (malloc_trim) marks
 * the claim taken, under the lock, and for a clear waits on the arena's
 * condition until the claim ends, before the block is returned: so the
 * zeroer never writes to a block after it was handed out, and the wait is
 * at most one step of 256 KiB once the zeroer runs. A thread waits only
 * when no other free run fits (hz_chunk_alloc_avoiding): under CPU
 * contention the zeroer, at SCHED_IDLE, may be slow to end its step.
 *
 * After a fork, pages may be shared copy-on-write with the other process;
 * a clear would copy them, so the zeroer clears only the pages
 * /proc/self/pagemap says this process maps alone, and marks the others
 * shared, left to calloc until they are taken or released. */
#ifndef HZ_BACKGROUND_H
#define HZ_BACKGROUND_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

#pragma GCC visibility push(hidden)

/* Set once by hz_large_setup: whether the zeroer may run, and the reserve
 * it keeps (bytes of free clean pages across the arenas). */
extern int hz_zeroer_enabled;
extern size_t hz_zeroer_reserve;

/* After a large free or calloc (may_start 1) or malloc, with no lock
 * held: starts the zeroer the first time it may, and wakes it when wake is
 * set (memory freed, or the reserve drawn on: hz_zeroer_want). */
void hz_zeroer_kick(int may_start, int wake);
/* Set by the arenas, on the allocating thread, when a block took pages of
 * the reserve or pages not in memory: the reserve wants a refill. */
extern HZ_TLS int hz_zeroer_want;
/* The library's constructor has run: the zeroer may start. */
void hz_zeroer_allow(int allowed);
/* Exit has begun (the library's destructor): no zeroer starts again, and
 * a running one is asked to end, waited for at most 20 ms, so that the
 * process's memory is torn down by a thread of normal priority. */
void hz_zeroer_exit(void);

/* Under a's lock, before pages [lo, hi) of chunk c (or, with c NULL, the
 * cached huge block h) are handed out: marks an overlapping claim taken
 * and, for a clear, waits until it ends. */
void hz_zeroer_collide(struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		       const struct hz_huge *h);
/* Under a's lock: waits until no piece of a is claimed (malloc_trim). */
void hz_zeroer_quiesce(struct hz_arena *a);
/* Whether the cached huge block h is claimed (a's lock held): not evicted. */
int hz_zeroer_claims(const struct hz_huge *h);

struct hz_zeroer_stats {
	int running, sched;          /* sched: enum hz_sched, while running */
	uint64_t starts, start_failures, sched_fallbacks;
	uint64_t cleared, populated; /* bytes published as clean */
	uint64_t abandoned;          /* bytes of pieces taken before they were done */
	uint64_t waits;              /* handouts that waited for a piece */
	uint64_t cpu_ns;             /* the thread's CPU time */
	uint64_t wakeups;
	uint64_t exits;              /* the thread ended, idle for a second (or at exit) */
};
void hz_zeroer_stats(struct hz_zeroer_stats *out);

/* fork: the zeroer's lock, taken before the arenas'; in the child the
 * claim is dropped (its pages stay dirty) and no thread runs. */
void hz_zeroer_fork_prepare(void);
void hz_zeroer_fork_parent(void);
void hz_zeroer_fork_child(void);

#pragma GCC visibility pop

#endif
