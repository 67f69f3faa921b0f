/* The embedded jemalloc's fork handlers (small.c): its pthread_atfork,
 * renamed, keeps them here; the library's one set of fork handlers runs
 * them in their place in the order. No jemalloc symbol is referenced:
 * the unit tests link this file without jemalloc. */
#include <stddef.h>

#include "allocator.h"

static void (*je_prepare)(void), (*je_parent)(void), (*je_child)(void);
/* small.c's lock on jemalloc's tables (a leaf, held around one mmap):
 * taken around a fork, so that no child inherits it held. */
static int tables_lock;

void hz_small_tables_lock(void)
{
	while (__atomic_exchange_n(&tables_lock, 1, __ATOMIC_ACQUIRE))
		hz_os_yield();
}

void hz_small_tables_unlock(void)
{
	__atomic_store_n(&tables_lock, 0, __ATOMIC_RELEASE);
}
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

void hz_small_fork_prepare(void)
{
	hz_small_tables_lock();
	void (*p)(void) = __atomic_load_n(&je_prepare, __ATOMIC_ACQUIRE);
	je_locked = p != NULL;
	if (p)
		p();
}

void hz_small_fork_parent(void)
{
	if (je_locked)
		je_parent();
	hz_small_tables_unlock();
}

void hz_small_fork_child(void)
{
	if (je_locked)
		je_child();
	hz_small_tables_unlock();
}
