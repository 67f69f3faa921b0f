/* fork, for the whole allocator (large.h), at the top of its room: every
 * lock is taken before, in one order (the zeroer's, every arena's, the
 * huge descriptors', the registry's: the order in which the allocator
 * nests them), and released after in parent and child, so a child forked
 * while other threads allocate finds no lock held by a thread it does not
 * have. The state (blocks, chunks, dirty memory) is inherited as it is;
 * the child's counters start from zero, its report being its own. */
#include "background.h"
#include "huge.h"
#include "large.h"

void hz_large_fork_prepare(void)
{
	hz_zeroer_fork_prepare();
	for (int i = 0; i < HZ_ARENAS; i++)
		pthread_mutex_lock(&hz_arenas[i].lock);
	hz_huge_lock();
	hz_reg_lock();
}

static void unlock_all(void)
{
	hz_reg_unlock();
	hz_huge_unlock();
	for (int i = HZ_ARENAS - 1; i >= 0; i--)
		pthread_mutex_unlock(&hz_arenas[i].lock);
}

void hz_large_fork_parent(void)
{
	unlock_all();
	hz_zeroer_fork_parent();
}

void hz_large_fork_child(void)
{
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		a->known_zero = a->purged = 0;
		a->purges = a->purge_ranges = a->purge_syscalls = a->purge_fallbacks = 0;
		a->nalloc = a->ncalloc = a->calloc_bytes = a->nfree = 0;
		a->hugetlb_chunks = a->hugetlb_fallbacks = 0;
		a->cleared_caller = a->reserve_hits = a->reserve_misses = 0;
		/* No thread of the child waits here. */
		pthread_cond_init(&a->zeroer_done, NULL);
	}
	unlock_all();
	hz_zeroer_fork_child();
}
