/* allocator/work.h: the zeroer's work, one piece at a time (claim.h):
 * freed memory pre-cleared first (it adds no memory), then the reserve,
 * free pages not in memory populated up to what the program has been
 * taking fresh (budget.h's hz_budget_reserve_max at most), only while the
 * program takes no page faults, and only while what it populated is used
 * rather than released unused; and the decay, for
 * memory no free would otherwise revisit. Run by the zeroer's thread
 * (zeroer.h), never by the allocator's calls. */
#ifndef HZ_WORK_H
#define HZ_WORK_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Claims, clears or populates and publishes one piece in some arena,
 * taking and releasing the arenas' locks: 1 when there was one, 0 when
 * there is none, HZ_WORK_DEFERRED when only the reserve is left to fill
 * and the program is taking page faults (touching memory): populating
 * now would compete with them; ask again in a while. */
#define HZ_WORK_DEFERRED 2
int hz_work_once(void);
/* The decay in every arena (hz_budget_bound); 1 when any arena still
 * holds free memory in memory after it. */
int hz_work_decay(void);

/* Set at the first fork, in parent and child (fork_locks.h): pages may be
 * shared copy-on-write from then on, and a clear of one would copy it,
 * so only the pages /proc/self/pagemap says this process maps alone are
 * cleared; where it cannot say, none. */
extern int hz_work_forked;

struct hz_work_counts {
	uint64_t cleared, populated; /* bytes published as clean */
	uint64_t abandoned;          /* bytes of pieces taken before they were done */
};
extern struct hz_work_counts hz_work_n;

#pragma GCC visibility pop

#endif
