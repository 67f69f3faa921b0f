/* allocator/zeroer.h: the background zeroer's thread, at the top of the
 * allocator with fork: it runs the work (work.h) at SCHED_IDLE (nice 19
 * where that is refused), sleeps when there is none, runs the decay every
 * 250 ms while the arenas hold free memory, runs fresh memory's probe
 * when it is due (fresh.h), and ends a second after it has nothing left
 * to do. It starts at the first large free or calloc (or allocation with
 * the probe due),
 * from the allocator's entry (large.h) with no lock held, once the
 * library's constructor has allowed it, never once exit has begun; a
 * forked child has none until it has lived a second. When and why:
 * docs/design.md, "The background zeroer". */
#ifndef HZ_ZEROER_H
#define HZ_ZEROER_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Whether the zeroer may run (HUGEZERO_BACKGROUND); set once at setup. */
extern int hz_zeroer_enabled;

/* After a large free or calloc (may_start 1) or malloc, with no lock
 * held: starts the zeroer the first time it may, and wakes it when wake is
 * set (memory freed, or the reserve drawn on). */
void hz_zeroer_kick(int may_start, int wake);
/* The library's constructor has run: the zeroer may start. */
void hz_zeroer_allow(int allowed);
/* Exit has begun (the library's destructor): no zeroer starts again, and
 * a running one is raised back to normal priority where permitted, asked
 * to end and waited for at most 200 ms (20 ms unraised), so that the
 * process's memory is torn down by a thread of normal priority. */
void hz_zeroer_exit(void);

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

/* fork (fork_locks.h): the thread's lock, taken first; in the child no thread
 * runs and the counters start from zero. */
void hz_zeroer_fork_prepare(void);
void hz_zeroer_fork_parent(void);
void hz_zeroer_fork_child(void);

#pragma GCC visibility pop

#endif
