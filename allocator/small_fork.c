/* The embedded jemalloc's fork handlers (small.c): its pthread_atfork,
 * renamed, keeps them here; the library's one set of fork handlers runs
 * them in their place in the order. No jemalloc symbol is referenced:
 * the unit tests link this file without jemalloc. */
#define _GNU_SOURCE /* PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP */
#include <pthread.h>
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
/* The thread cache's class locks (small_cache.c): held around a
 * transfer and jemalloc's calls for a class's lists, so taken before
 * jemalloc's own locks. Adaptive: a thread that finds one held tries
 * again a bounded number of times (glibc's, 100 by default) before it
 * sleeps, as the holder copies one batch of pointers and leaves. Asleep
 * at once, producers and consumers meeting on a class spent 6% of
 * xmalloc-test's time in futex calls; it runs 0.81-0.89x as long so. */
static pthread_mutex_t cache_locks[HZ_CACHE_CLASSES] = {[0 ... HZ_CACHE_CLASSES - 1] =
								PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP};

void hz_small_cache_lock(unsigned c)
{
	pthread_mutex_lock(&cache_locks[c]);
}

void hz_small_cache_unlock(unsigned c)
{
	pthread_mutex_unlock(&cache_locks[c]);
}

/* The thread cache's table lock (small_cache.c): held around the mmap
 * of the class table's pages, inside jemalloc's extent hooks, so taken
 * after jemalloc's own locks. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

void hz_small_cache_table_lock(void)
{
	pthread_mutex_lock(&table_lock);
}

void hz_small_cache_table_unlock(void)
{
	pthread_mutex_unlock(&table_lock);
}

static void cache_unlock_all(void)
{
	for (unsigned c = HZ_CACHE_CLASSES; c-- > 0;)
		pthread_mutex_unlock(&cache_locks[c]);
}

/* The live threads' caches' counts, and the gone ones' sum. */
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hz_cache_calls *live;
static uint64_t gone[HZ_CACHE_CLASSES];
static HZ_TLS struct hz_cache_calls *mine;

/* Adds k's counts into to[], per class. */
static void add(uint64_t *to, const struct hz_cache_calls *k)
{
	for (unsigned c = 0; c < HZ_CACHE_CLASSES; c++)
		to[c] += __atomic_load_n(&k->calls[c], __ATOMIC_RELAXED);
}

void hz_small_cache_link(struct hz_cache_calls *k)
{
	pthread_mutex_lock(&calls_lock);
	k->prev = NULL;
	k->next = live;
	if (live)
		live->prev = k;
	live = mine = k;
	pthread_mutex_unlock(&calls_lock);
}

void hz_small_cache_unlink(struct hz_cache_calls *k)
{
	pthread_mutex_lock(&calls_lock);
	add(gone, k);
	for (unsigned c = 0; c < HZ_CACHE_CLASSES; c++)
		k->calls[c] = 0;
	if (k->prev)
		k->prev->next = k->next;
	else
		live = k->next;
	if (k->next)
		k->next->prev = k->prev;
	mine = NULL;
	pthread_mutex_unlock(&calls_lock);
}

void hz_small_cache_calls(uint64_t *calls)
{
	pthread_mutex_lock(&calls_lock);
	for (unsigned c = 0; c < HZ_CACHE_CLASSES; c++)
		calls[c] = gone[c];
	for (const struct hz_cache_calls *k = live; k; k = k->next)
		add(calls, k);
	pthread_mutex_unlock(&calls_lock);
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
	for (unsigned c = 0; c < HZ_CACHE_CLASSES; c++)
		pthread_mutex_lock(&cache_locks[c]);
	pthread_mutex_lock(&calls_lock);
	hz_small_tables_lock();
	void (*p)(void) = __atomic_load_n(&je_prepare, __ATOMIC_ACQUIRE);
	je_locked = p != NULL;
	if (p)
		p();
	pthread_mutex_lock(&table_lock);
}

void hz_small_fork_parent(void)
{
	pthread_mutex_unlock(&table_lock);
	if (je_locked)
		je_parent();
	hz_small_tables_unlock();
	pthread_mutex_unlock(&calls_lock);
	cache_unlock_all();
}

void hz_small_fork_child(void)
{
	pthread_mutex_unlock(&table_lock);
	if (je_locked)
		je_child();
	hz_small_tables_unlock();
	/* The other threads' caches are gone with them; their counts (the
	 * heap's copy) are folded in, so the child's go on from the
	 * parent's as jemalloc's figures do. */
	for (const struct hz_cache_calls *k = live; k; k = k->next)
		if (k != mine)
			add(gone, k);
	live = mine;
	if (mine)
		mine->prev = mine->next = NULL;
	pthread_mutex_unlock(&calls_lock);
	cache_unlock_all();
}
