/* The small blocks' thread cache (small_cache.c): a front end over the
 * embedded jemalloc for its size classes up to HZ_CACHE_MAX, installed
 * in the small engine's table (the seam stays as it is).
 *
 * Each class has an arena of jemalloc's of its own, whose extents come
 * from a region of the address space of the class's own (its extent
 * hooks below). A free then finds a block's class from its address, a
 * subtraction and a shift, where jemalloc's free looks it up in its
 * radix tree. Per thread and class, two lists of free blocks, linked
 * through their first word (Bonwick's magazines): the loaded one, which
 * malloc pops and free pushes, and a full spare. Between threads, per
 * class, a transfer cache of full lists under a lock: a thread that
 * frees what others allocate (a consumer, a server's reply thread) hands
 * them back a list at a time, one lock per list, where jemalloc's thread
 * caches return each block to its slab under the bin's lock. Lists come
 * from and go back to jemalloc through an explicit thread cache of the
 * class's (tcache.create), under the class's lock: in batches, as
 * jemalloc's own thread caches fill and flush.
 *
 * A block of the cache is jemalloc's block in every other way: its
 * usable size, realloc, the extended API and statistics are jemalloc's
 * (its figures count the blocks the caches hold as allocated). Where a
 * class's arena or its region cannot be had (another mapping took the
 * address, an address space of fewer bits, no memory), that class's
 * blocks are jemalloc's as before. A thread's lists go back at its exit;
 * malloc_trim gives back the transfer caches' and the calling thread's
 * lists, and the classes' explicit caches. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "../obs/obs.h"
#include "allocator.h"

/* jemalloc's mallocx flags MALLOCX_ARENA(a) and MALLOCX_TCACHE(tc). */
#define JE_ARENA(a) ((int)(((unsigned)(a) + 1) << 20))
#define JE_TCACHE(tc) ((int)(((unsigned)(tc) + 2) << 8))

/* A list of the loaded magazine holds at most this many bytes of blocks
 * (16 to 128 blocks): two lists per class per thread, about jemalloc's
 * own thread cache's bound for these classes. */
#define LIST_BYTES 8192
#define LIST_MIN 16
#define LIST_MAX 128
/* A thread's first calls go to jemalloc's own thread cache: a class's
 * arena costs about 90 KiB of metadata and 25 faults at its start, 14
 * classes 1 ms, a third of /bin/ls's run. A process or a thread that
 * makes fewer calls never pays it; one that makes more pays it once. */
#define WARM 16384
/* Full lists each transfer cache holds before it gives lists back: up
 * to 512 KiB of blocks, and 64 lists. */
#define TRANSFER_BYTES (512 << 10)
#define TRANSFER_LISTS 64

/* jemalloc's extent hooks (its extent_hooks_t, an API of its own). */
struct je_extent_hooks {
	void *(*alloc)(struct je_extent_hooks *, void *, size_t, size_t, _Bool *, _Bool *, unsigned);
	_Bool (*dalloc)(struct je_extent_hooks *, void *, size_t, _Bool, unsigned);
	void (*destroy)(struct je_extent_hooks *, void *, size_t, _Bool, unsigned);
	_Bool (*commit)(struct je_extent_hooks *, void *, size_t, size_t, size_t, unsigned);
	_Bool (*decommit)(struct je_extent_hooks *, void *, size_t, size_t, size_t, unsigned);
	_Bool (*purge_lazy)(struct je_extent_hooks *, void *, size_t, size_t, size_t, unsigned);
	_Bool (*purge_forced)(struct je_extent_hooks *, void *, size_t, size_t, size_t, unsigned);
	_Bool (*split)(struct je_extent_hooks *, void *, size_t, size_t, size_t, _Bool, unsigned);
	_Bool (*merge)(struct je_extent_hooks *, void *, size_t, void *, size_t, _Bool, unsigned);
};

/* A class, shared by every thread; its lock is small_fork.c's
 * hz_small_cache_lock(c). */
struct central {
	int state;      /* 0 not started, 1 ready, -1 refused: jemalloc's blocks as before */
	int flags;      /* mallocx flags: the class's arena and explicit cache */
	unsigned cache; /* the explicit cache's identifier */
	unsigned lists; /* full lists in list[] */
	void *list[TRANSFER_LISTS];
	uintptr_t next; /* the region's first address not handed to jemalloc */
	struct je_extent_hooks hooks;
} __attribute__((aligned(64)));

/* A thread's lists of one class. */
struct bin {
	void *head;      /* the loaded list */
	uint32_t n, max; /* its length; max 0 sends every free to the slow path */
	void *spare;     /* a full list (max blocks), or NULL */
};

struct cache {
	struct bin bin[HZ_CACHE_CLASSES];
	int state;     /* 0 new, 1 caching (flushed at its exit), 2 gone: jemalloc's blocks */
	uint32_t warm; /* calls to jemalloc while new */
	struct hz_cache_calls calls; /* blocks malloc took from the lists, per class */
};

static HZ_TLS struct cache tc;
static struct central central[HZ_CACHE_CLASSES];
static uint8_t class_of[(HZ_CACHE_MAX >> 3) + 1]; /* by (size + 7) >> 3 */
static uint32_t class_size[HZ_CACHE_CLASSES], class_max[HZ_CACHE_CLASSES], class_lists[HZ_CACHE_CLASSES];
static unsigned classes;
static pthread_key_t exit_key;
static uint64_t filled, flushed; /* blocks taken from jemalloc and given back */

static inline uintptr_t region(unsigned c)
{
	return HZ_CACHE_BASE + ((uintptr_t)c << HZ_CACHE_REGION_SHIFT);
}

/* ---- the class's arena: its extents from its region ---- */

static unsigned hooks_class(struct je_extent_hooks *h)
{
	return (unsigned)((struct central *)((char *)h - offsetof(struct central, hooks)) - central);
}

/* Fresh pages at the region's next address, aligned as asked; NULL where
 * the region is spent or another mapping holds the address. */
static void *extent_alloc(struct je_extent_hooks *h, void *at, size_t size, size_t align, _Bool *zero,
			  _Bool *commit, unsigned arena)
{
	(void)arena;
	struct central *k = &central[hooks_class(h)];
	uintptr_t end = region(hooks_class(h)) + ((uintptr_t)1 << HZ_CACHE_REGION_SHIFT);
	uintptr_t cur = __atomic_load_n(&k->next, __ATOMIC_RELAXED), start;
	if (align < hz_page_size)
		align = hz_page_size;
	do {
		start = (cur + align - 1) & ~(uintptr_t)(align - 1);
		if ((at && (uintptr_t)at != start) || start + size > end || start + size < start)
			return NULL;
	} while (!__atomic_compare_exchange_n(&k->next, &cur, start + size, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	if (hz_os_map_at((void *)start, size, 0))
		return NULL;
	*zero = 1;
	*commit = 1;
	return (void *)start;
}

/* Kept: jemalloc retains the extent, and purges it through the hooks. */
static _Bool extent_dalloc(struct je_extent_hooks *h, void *p, size_t size, _Bool committed, unsigned arena)
{
	(void)h, (void)p, (void)size, (void)committed, (void)arena;
	return 1;
}

/* jemalloc's own policy for its purges (small_purge.c). */
static _Bool extent_purge_lazy(struct je_extent_hooks *h, void *p, size_t size, size_t off, size_t len,
			       unsigned arena)
{
	(void)h, (void)size, (void)arena;
	return hz_je_madvise((char *)p + off, len, MADV_FREE) != 0;
}

static _Bool extent_purge_forced(struct je_extent_hooks *h, void *p, size_t size, size_t off, size_t len,
				 unsigned arena)
{
	(void)h, (void)size, (void)arena;
	return hz_je_madvise((char *)p + off, len, MADV_DONTNEED) != 0;
}

/* Extents of one region split and merge as jemalloc's own do. */
static _Bool extent_split(struct je_extent_hooks *h, void *p, size_t size, size_t a, size_t b, _Bool committed,
			  unsigned arena)
{
	(void)h, (void)p, (void)size, (void)a, (void)b, (void)committed, (void)arena;
	return 0;
}

static _Bool extent_merge(struct je_extent_hooks *h, void *a, size_t sa, void *b, size_t sb, _Bool committed,
			  unsigned arena)
{
	(void)h, (void)a, (void)sa, (void)b, (void)sb, (void)committed, (void)arena;
	return 0;
}

/* The class's arena and explicit cache, at its first refill, under its
 * lock: 1, or -1 where jemalloc refused either. */
static int central_start(unsigned c)
{
	struct central *k = &central[c];
	k->next = region(c);
	k->hooks = (struct je_extent_hooks){extent_alloc, extent_dalloc, NULL,		 NULL, NULL,
					    extent_purge_lazy, extent_purge_forced, extent_split, extent_merge};
	struct je_extent_hooks *hooks = &k->hooks;
	unsigned arena;
	size_t sz = sizeof arena;
	if (hz_je_mallctl("arenas.create", &arena, &sz, &hooks, sizeof hooks))
		return -1;
	unsigned cache;
	sz = sizeof cache;
	if (hz_je_mallctl("tcache.create", &cache, &sz, NULL, 0))
		return -1;
	k->cache = cache;
	k->flags = JE_ARENA(arena) | JE_TCACHE(cache);
	return 1;
}

/* ---- between a thread's lists and jemalloc, under the class's lock ---- */

/* Up to max blocks of class c from jemalloc, linked; their number in *n. */
static void *fill(unsigned c, uint32_t max, uint32_t *n)
{
	struct central *k = &central[c];
	void *head = NULL;
	uint32_t i = 0;
	for (; i < max; i++) {
		void *p = hz_je_mallocx(class_size[c], k->flags);
		if (!p || (uintptr_t)p - region(c) >= ((uintptr_t)1 << HZ_CACHE_REGION_SHIFT)) {
			if (p) /* not the region's (jemalloc's own fallback): back */
				hz_je_dallocx(p, k->flags);
			break;
		}
		*(void **)p = head;
		head = p;
	}
	__atomic_fetch_add(&filled, i, __ATOMIC_RELAXED);
	*n = i;
	return head;
}

static void flush(unsigned c, void *list)
{
	uint64_t n = 0;
	while (list) {
		void *next = *(void **)list;
		hz_je_dallocx(list, central[c].flags);
		list = next;
		n++;
	}
	__atomic_fetch_add(&flushed, n, __ATOMIC_RELAXED);
}

/* A full list into the transfer cache, or back to jemalloc where it is
 * full. Under the lock. */
static void put_list(unsigned c, void *list)
{
	struct central *k = &central[c];
	if (k->lists < class_lists[c])
		k->list[k->lists++] = list;
	else
		flush(c, list);
}

/* ---- a thread's start and exit ---- */

static void thread_exit(void *arg);

/* Lists for this thread where its exit can give them back; else its
 * blocks are jemalloc's (state 2). */
static void thread_start(void)
{
	/* Gone while it is set: glibc's pthread_setspecific allocates for a
	 * key past its first 32, and that call must not come back here. */
	tc.state = 2;
	if (pthread_setspecific(exit_key, &tc))
		return;
	for (unsigned c = 0; c < classes; c++)
		tc.bin[c].max = class_max[c];
	hz_small_cache_link(&tc.calls);
	tc.state = 1;
}

/* Gives back every list; from now on the thread's blocks are jemalloc's
 * (a destructor of another library's may still allocate). */
static void give_back(void)
{
	for (unsigned c = 0; c < classes; c++) {
		struct bin *b = &tc.bin[c];
		void *head = b->head, *spare = b->spare;
		b->head = b->spare = NULL;
		b->n = 0;
		if (!head && !spare)
			continue;
		hz_small_cache_lock(c);
		if (spare)
			put_list(c, spare);
		flush(c, head);
		hz_small_cache_unlock(c);
	}
}

static void thread_exit(void *arg)
{
	(void)arg;
	for (unsigned c = 0; c < classes; c++)
		tc.bin[c].max = 0;
	tc.state = 2;
	give_back();
	hz_small_cache_unlink(&tc.calls);
}

/* ---- the slow paths ---- */

/* malloc(size) where class c's loaded list is empty. */
static HZ_NOINLINE void *refill(size_t size, unsigned c)
{
	if (hz_unlikely(tc.state != 1)) {
		if (tc.state == 0 && ++tc.warm >= WARM)
			thread_start();
		if (tc.state != 1)
			return hz_je_malloc(size);
	}
	struct bin *b = &tc.bin[c];
	void *list = b->spare;
	uint32_t n = b->max;
	if (list) {
		b->spare = NULL;
	} else {
		struct central *k = &central[c];
		hz_small_cache_lock(c);
		if (!k->state)
			k->state = central_start(c);
		if (k->lists)
			list = k->list[--k->lists];
		else if (k->state > 0)
			list = fill(c, b->max, &n);
		hz_small_cache_unlock(c);
		if (!list)
			return hz_je_malloc(size);
	}
	b->head = *(void **)list;
	b->n = n - 1;
	tc.calls.calls[c]++;
	return list;
}

/* free(p) of class c where the loaded list is full (or the thread's
 * lists are not set up). */
static HZ_NOINLINE void overflow(void *p, unsigned c)
{
	if (hz_unlikely(tc.state != 1)) {
		if (tc.state == 0 && ++tc.warm >= WARM)
			thread_start();
		if (tc.state != 1) {
			hz_je_free(p);
			return;
		}
	}
	struct bin *b = &tc.bin[c];
	if (b->spare) {
		hz_small_cache_lock(c);
		put_list(c, b->spare);
		hz_small_cache_unlock(c);
	}
	b->spare = b->head;
	*(void **)p = NULL;
	b->head = p;
	b->n = 1;
}

/* ---- the table's functions ---- */

static inline unsigned size_class(size_t size)
{
	return class_of[(size + 7) >> 3];
}

static void *cache_malloc(size_t size)
{
	if (hz_likely(size <= HZ_CACHE_MAX)) {
		unsigned c = size_class(size);
		struct bin *b = &tc.bin[c];
		void *p = b->head;
		if (hz_likely(p != NULL)) {
			b->head = *(void **)p;
			b->n--;
			tc.calls.calls[c]++;
			return p;
		}
		return refill(size, c);
	}
	return hz_je_malloc(size);
}

static void cache_free(void *p)
{
	uintptr_t off = (uintptr_t)p - HZ_CACHE_BASE;
	if (hz_likely(off < HZ_CACHE_SPAN)) {
		unsigned c = (unsigned)(off >> HZ_CACHE_REGION_SHIFT);
		struct bin *b = &tc.bin[c];
		if (hz_likely(b->n < b->max)) {
			*(void **)p = b->head;
			b->head = p;
			b->n++;
			return;
		}
		overflow(p, c);
		return;
	}
	hz_je_free(p);
}

/* The whole block cleared, as jemalloc's calloc leaves it. */
static void *cache_calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total) || total > HZ_CACHE_MAX)
		return hz_je_calloc(n, size);
	void *p = cache_malloc(total);
	return p ? hz_fill_counted(p, 0, class_size[size_class(total)]) : NULL;
}

static void *cache_mallocx(size_t size, int flags)
{
	return flags ? hz_je_mallocx(size, flags) : cache_malloc(size);
}

static void cache_dallocx(void *p, int flags)
{
	if (flags)
		hz_je_dallocx(p, flags);
	else
		cache_free(p);
}

static void cache_sdallocx(void *p, size_t size, int flags)
{
	if (flags)
		hz_je_sdallocx(p, size, flags);
	else
		cache_free(p);
}

int hz_small_cache_install(struct hz_small_engine *e)
{
	if (!e->jemalloc)
		return -1;
	/* jemalloc's classes up to HZ_CACHE_MAX, from its own rounding. */
	size_t last = 0;
	for (size_t i = 0; i <= HZ_CACHE_MAX >> 3; i++) {
		size_t s = hz_je_nallocx(i ? i << 3 : 1, 0);
		if (s != last) {
			if (classes == HZ_CACHE_CLASSES || s > HZ_CACHE_MAX)
				return -1;
			class_size[classes++] = (uint32_t)s;
			last = s;
		}
		class_of[i] = (uint8_t)(classes - 1);
	}
	for (unsigned c = 0; c < classes; c++) {
		uint32_t m = LIST_BYTES / class_size[c];
		class_max[c] = m < LIST_MIN ? LIST_MIN : m > LIST_MAX ? LIST_MAX : m;
		uint32_t l = TRANSFER_BYTES / (class_max[c] * class_size[c]);
		class_lists[c] = l < TRANSFER_LISTS ? l : TRANSFER_LISTS;
	}
	if (pthread_key_create(&exit_key, thread_exit))
		return -1;
	e->malloc = cache_malloc;
	e->calloc = cache_calloc;
	e->free = cache_free;
	e->mallocx = cache_mallocx;
	e->dallocx = cache_dallocx;
	e->sdallocx = cache_sdallocx;
	return 0;
}

void hz_small_cache_trim(void)
{
	if (!classes)
		return;
	if (tc.state == 1)
		give_back();
	for (unsigned c = 0; c < classes; c++) {
		struct central *k = &central[c];
		hz_small_cache_lock(c);
		while (k->lists)
			flush(c, k->list[--k->lists]);
		if (k->state > 0)
			hz_je_mallctl("tcache.flush", NULL, NULL, &k->cache, sizeof k->cache);
		hz_small_cache_unlock(c);
	}
}

void hz_small_cache_counters(hz_counter_fn fn, void *arg)
{
	fn(arg, "malloc.small.cache_filled", __atomic_load_n(&filled, __ATOMIC_RELAXED), 0);
	fn(arg, "malloc.small.cache_flushed", __atomic_load_n(&flushed, __ATOMIC_RELAXED), 0);
}
