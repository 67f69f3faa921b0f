/* fork, for the whole allocator (fork_locks.c). */
#include "allocator.h"

void hz_allocator_fork_prepare(void)
{
	hz_zeroer_fork_prepare();
	hz_helpers_fork_prepare();
	__atomic_store_n(&hz_work_forked, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < HZ_ARENAS; i++)
		pthread_mutex_lock(&hz_arenas[i].lock);
	hz_huge_lock();
	hz_reg_lock();
	hz_fresh_fork_prepare();
}

static void unlock_all(void)
{
	hz_fresh_fork_parent();
	hz_reg_unlock();
	hz_huge_unlock();
	for (int i = HZ_ARENAS - 1; i >= 0; i--)
		pthread_mutex_unlock(&hz_arenas[i].lock);
}

void hz_allocator_fork_parent(void)
{
	unlock_all();
	hz_helpers_fork_parent();
	hz_zeroer_fork_parent();
}

void hz_allocator_fork_child(void)
{
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		a->n = (struct hz_arena_counters){0};
		/* No thread of the child waits here. */
		pthread_cond_init(&a->claim_done, NULL);
	}
	hz_claim_reset();
	hz_claim_waits = 0;
	hz_work_n = (struct hz_work_counts){0};
	hz_fresh_fork_child();
	unlock_all();
	hz_helpers_fork_child();
	hz_populate_fork_child();
	hz_zeroer_fork_child();
}
