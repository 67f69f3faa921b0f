/* fork, for the whole library (fork.h). */
#include <pthread.h>

#include "../allocator/large.h"
#include "../allocator/prim.h"
#include "../obs/fork.h"
#include "fork.h"

static void (*je_prepare)(void), (*je_parent)(void), (*je_child)(void);
/* Whether this fork's prepare ran jemalloc's (jemalloc may start on
 * another thread during a fork: its parent and child handlers run only
 * after its prepare did). */
static int je_locked;

int hz_je_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	__atomic_store_n(&je_parent, parent, __ATOMIC_RELAXED);
	__atomic_store_n(&je_child, child, __ATOMIC_RELAXED);
	__atomic_store_n(&je_prepare, prepare, __ATOMIC_RELEASE);
	return 0;
}

static void prepare(void)
{
	hz_large_fork_prepare();
	hz_obs_fork_prepare();
	void (*p)(void) = __atomic_load_n(&je_prepare, __ATOMIC_ACQUIRE);
	je_locked = p != NULL;
	if (p)
		p();
}

static void parent(void)
{
	if (je_locked)
		je_parent();
	hz_obs_fork_parent();
	hz_large_fork_parent();
}

static void child(void)
{
	if (je_locked)
		je_child();
	hz_obs_fork_child();
	hz_large_fork_child();
}

void hz_fork_register(void)
{
	static int state; /* 0, 1 registering, 2 registered */
	/* volatile: glibc declares pthread_atfork a leaf, which it is not
	 * here (it comes back through dynamic.c's __register_atfork). */
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
