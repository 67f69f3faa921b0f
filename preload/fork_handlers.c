/* fork, for the whole library (fork_handlers.c). */
#include <pthread.h>

#include "../allocator/allocator.h"
#include "../obs/obs.h"
#include "../os/os.h"
#include "preload.h"

static void prepare(void)
{
	hz_quarantine_fork_prepare(); /* a leaf: no other lock taken while one is held */
	hz_allocator_fork_prepare();
	hz_obs_fork_prepare();
	hz_small_fork_prepare();
}

static void parent(void)
{
	hz_small_fork_parent();
	hz_obs_fork_parent();
	hz_allocator_fork_parent();
	hz_quarantine_fork_parent();
}

static void child(void)
{
	hz_small_fork_child();
	hz_obs_fork_child();
	hz_allocator_fork_child();
	hz_quarantine_fork_child();
	hz_obs_fork_child_ready();
}

void hz_fork_register(void)
{
	static int state; /* 0, 1 registering, 2 registered */
	/* volatile: glibc declares pthread_atfork a leaf, which it is not
	 * here (it comes back through atfork.c's __register_atfork). */
	static HZ_TLS volatile int here;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2 || here)
		return; /* done, or this thread's own registration coming back */
	int expect = 0;
	if (!__atomic_compare_exchange_n(&state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2)
			hz_os_yield();
		return;
	}
	here = 1;
	pthread_atfork(prepare, parent, child);
	here = 0;
	__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}
