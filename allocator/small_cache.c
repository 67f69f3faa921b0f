/* The small blocks' thread cache (small_cache.c): a front end over the
 * embedded jemalloc for its size classes up to HZ_CACHE_MAX (its small
 * classes and its large ones up to 64 KiB), and from malloc's slow path
 * for its large classes on to HZ_CACHE_BIG_MAX (the big classes, below),
 * installed in the small engine's table (the seam stays as it is).
 *
 * The blocks come from an arena of jemalloc's of the cache's own, whose
 * extents lie in a region of the address space of its own (its extent
 * hooks below), beside a table of a byte per 4 KiB page of it: the class
 * of the blocks on that page, written as the blocks are taken from
 * jemalloc (jemalloc's slabs and large blocks never share a page; a
 * large block realloc resizes in place is classed again). A free then finds a
 * block's class with a compare and a load, where jemalloc's free looks
 * it up in its radix tree. Per thread and class, a stack of pointers to
 * free blocks, two batches deep, which malloc pops and free pushes
 * without touching the block. Between threads, per class, a transfer
 * cache of whole batches under a lock: a thread that frees what others
 * allocate (a consumer, a server's reply thread) hands them back a batch
 * at a time, one lock per batch, where jemalloc's thread caches return
 * each block to its slab under the bin's lock. Batches come from and go
 * back to jemalloc through an explicit jemalloc thread cache of the
 * thread's own (tcache.create; jemalloc's automatic ones fill from the
 * thread's arena, not the cache's), out of any lock of the cache's, as
 * jemalloc's own thread caches fill and flush: taken by its batch call,
 * given back sized (no lookup of the block's page).
 *
 * A block of the cache is jemalloc's block in every other way: its
 * usable size, realloc, the extended API and statistics are jemalloc's
 * (its figures count the blocks the caches hold as allocated). Where the
 * arena or its region cannot be had (another mapping took the address,
 * an address space of fewer bits, no memory), the blocks are jemalloc's
 * as before. A thread's stacks go back at its exit; malloc_trim gives
 * back the transfer caches' blocks and the calling thread's, its explicit
 * jemalloc cache's too. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "../obs/obs.h"
#include "allocator.h"

/* jemalloc's mallocx flags MALLOCX_ARENA(a) and MALLOCX_TCACHE(tc). */
#define JE_ARENA(a) ((int)(((unsigned)(a) + 1) << 20))
#define JE_TCACHE(tc) ((int)(((unsigned)(tc) + 2) << 8))
#define JE_TCACHE_NONE JE_TCACHE(-1)

/* A batch, what moves between a thread and the transfer cache or
 * jemalloc at once, holds at most this many bytes of blocks (4 to 128
 * blocks); a thread's stack of a class holds two: less than jemalloc's
 * own thread cache's bound for its small classes (20 blocks of 14 KiB);
 * for its large classes, 16 to 64 KiB, 8 blocks where jemalloc's holds 4
 * (small.c's tcache_nslots_large), which its extent code fills and
 * flushes one block at a time. */
#define LIST_BYTES 8192
#define LIST_MIN 4
#define LIST_MAX 128
/* The big classes, jemalloc's large ones above HZ_CACHE_MAX (80 KiB to
 * 1 MiB, each a multiple of 16 KiB): jemalloc serves them only past its
 * fast path, and its thread event, which runs at every 64 KiB a thread
 * allocates, ran at each such call: a freed block of 128 KiB taken again
 * cost 58 ns a free and malloc, tcmalloc's 9 (the workload suite's
 * sweep). A thread keeps the last block it freed of each, in a slot of
 * the class's, up to BIG_HELD bytes in all; the others come from and go
 * back to its explicit jemalloc cache (4 blocks a class, as its own
 * thread cache kept them), no stack and no transfer cache. Given back
 * to the arena past that cache, or with a stack of two blocks a class
 * and the transfer caches, every other block took jemalloc's extent
 * code, where its cache had kept 4 of each: alloc_bench small (1 size in
 * 128 from 64 KiB to 1 MiB) ran 1.3-1.4 times as long with a 40% larger
 * peak resident set. Their frees take free's slow path (their stacks
 * are empty and full). */
#define BIG_SHIFT 14
#define BIG_CLASSES 16
#define BIG_HELD (1 << 20)
/* A thread's first calls go to jemalloc's own thread cache and its
 * automatic arenas. The cache's arena costs about 60 faults at its start
 * (jemalloc's metadata for it, a slab a class): a process that asks for
 * 300 KiB in 600 calls ran 0.5 ms longer with it (2.6 ms). Yet the
 * blocks taken while warm stay in the automatic arenas, whose pages
 * their frees leave dirty there for jemalloc's decay (10 s) once the
 * thread has gone on to the cache's arena: each thread's first 16384
 * calls left 0.5 MiB in each automatic arena (threads_bench server's
 * peak resident set 1.31x jemalloc's alone, 1.08x at 256 calls). So a
 * thread starts its stacks at its WARMth call or once its calls asked
 * for WARM_BYTES, about what the arena's start costs (a rent paid up to
 * the price of buying); after the process has the arena, at its
 * WARM_STARTEDth call (a thread's start costs its stacks' block). */
#define WARM 16384
#define WARM_BYTES (256 << 10)
#define WARM_STARTED 256
/* Where jemalloc makes no thread cache of its own at a thread's first
 * call (hz_small_start's lazy_tcache), the thread's is made at its
 * TCACHE_AFTERth slow path while new (a malloc of the cache's sizes or a
 * free of the region's blocks), by a malloc: as jemalloc, none for a
 * thread that only frees. Made, filled at each class's first
 * call (up to 100 blocks) and flushed at the thread's exit, it cost a
 * thread of a few calls 10 us, where a call without it takes a bin's
 * lock (tens of ns). A call jemalloc serves past the stacks makes it at
 * once (je_first); frees of jemalloc's blocks never do (je_free). */
#define TCACHE_AFTER 256
/* Batches each transfer cache holds before it gives them back to
 * jemalloc: up to 2 MiB of blocks, and 512 batches (a pointer array of
 * at most 512 KiB, for 8-byte blocks). Between threads that allocate and
 * threads that free at uneven rates (a producer descheduled while its
 * consumers free, xmalloc-test's and threads_bench batches' pattern), what
 * it cannot hold goes back to jemalloc and comes out again, a bin lock
 * per block: at 512 KiB a class, xmalloc-test ran 1.13x mimalloc's time,
 * at 2 MiB 0.99x. */
#define TRANSFER_BYTES (2 << 20)
#define TRANSFER_BATCHES 512
/* And all of them together up to 4 MiB of blocks (45 classes of 2 MiB
 * would hold 90 MiB, which a program's shifts between sizes left there:
 * rptest's peak resident set was twice jemalloc's). */
#define TRANSFER_TOTAL (4 << 20)

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
	uint32_t n;     /* blocks in held[], whole batches */
	uint32_t room;  /* blocks held[] has room for: grown by doubling, up to class_batches batches */
	void **held;
} __attribute__((aligned(64)));

/* A thread's stack of free blocks of one class: pointers, so that
 * neither malloc nor free touches a block (a block freed long after it
 * was written is often out of the cache). */
struct bin {
	void **top;  /* the next free slot: blocks lie in [low, top) */
	void **low;  /* top == low: empty (malloc's slow path) */
	void **high; /* top == high: full, two batches (free's slow path) */
};

struct cache {
	struct bin bin[HZ_CACHE_CLASSES];
	int state;     /* 0 new, 1 caching (flushed at its exit), 2 gone: jemalloc's blocks */
	uint32_t warm; /* calls to jemalloc while new */
	size_t warm_bytes; /* bytes those calls asked for */
	int tcache_on; /* jemalloc's thread cache of its own made (lazy: see TCACHE_AFTER) */
	int keyed;     /* its exit key set (thread_new) */
	void **stacks; /* the bins' slots, jemalloc's block */
	int flags;     /* mallocx flags: the arena and the thread's explicit cache */
	unsigned tcache; /* that cache's identifier */
	void *big[BIG_CLASSES]; /* a big class's block kept (BIG_HELD) */
	size_t big_held;        /* their bytes */
	/* Blocks malloc took from the stacks, per class: on the heap, in
	 * the stacks' block, so the counts list never points into a gone
	 * thread's TLS (a thread whose exit key's destructor is not run
	 * keeps its record linked, and its counts counted). */
	struct hz_cache_calls *calls;
};

/* The table's mark of a block of the region that no stack may take: a
 * large block realloc resized in place to a size of no class. Its bin
 * stays empty and full (both NULL), so free takes its slow path. */
#define NO_CLASS (HZ_CACHE_CLASSES - 1)

static HZ_TLS struct cache tc;
static struct central central[HZ_CACHE_CLASSES];
static uint8_t class_of[(HZ_CACHE_MAX >> 3) + 1]; /* by (size + 7) >> 3 */
/* The big classes: from big_from (HZ_CACHE_CLASSES: none), for sizes up
 * to big_max, by (size + 16 KiB - 1) >> BIG_SHIFT. */
static uint8_t big_of[(HZ_CACHE_BIG_MAX >> BIG_SHIFT) + 1];
static unsigned big_from = HZ_CACHE_CLASSES;
static size_t big_max;
static uint32_t class_size[HZ_CACHE_CLASSES], class_max[HZ_CACHE_CLASSES], class_batches[HZ_CACHE_CLASSES];
static unsigned classes;
static unsigned small_classes; /* the first ones, jemalloc's slabs' (arenas.nbins); 0 where it does not say */
/* The first of jemalloc's large classes among the cache's (arenas.nbins;
 * classes where every one is small or jemalloc does not say): those count
 * in large_calls. */
static unsigned large_from;
static size_t stack_slots; /* a thread's slots for every class: twice each's batch */
static size_t quantum = 1; /* jemalloc's (arenas.quantum): every class from it is its multiple */
static pthread_key_t exit_key;
static uint64_t filled, flushed; /* blocks taken from jemalloc and given back */
static uint64_t tcaches;         /* threads' jemalloc caches made here (lazy) */
static int lazy;                 /* jemalloc's own thread caches made here (TCACHE_AFTER) */
static int installed;            /* the cache in front (else refused: the lone functions) */
static size_t opt_tcache_mib[2] = {SIZE_MAX, SIZE_MAX}; /* opt.tcache, where jemalloc says */
static size_t transfer_bytes;    /* blocks the transfer caches hold */

/* ---- the arena: its extents from the region ---- */

static struct je_extent_hooks hooks;
static int arena_state; /* 0 none, 2 ready, -1 refused */
static int arena_flags;
static unsigned arena_index;
/* The region's first address not handed to jemalloc, and the end of the
 * class table's pages mapped (they cover the region up to it). */
static uintptr_t next = HZ_CACHE_BASE, table_end = HZ_CACHE_TABLE;

/* The class table's pages for the region up to end, mapped: 0 or -1.
 * One hook call at a time maps them (jemalloc may grow the arena and
 * its metadata at once, and calls the hook outside its own locks where a
 * growth from its retained memory failed); small_fork.c's fork handlers
 * take the lock after jemalloc's. */
static int table_cover(uintptr_t end)
{
	uintptr_t want = HZ_CACHE_TABLE + ((end - HZ_CACHE_BASE) >> HZ_CACHE_PAGE_SHIFT);
	want = (want + hz_page_size - 1) & ~(uintptr_t)(hz_page_size - 1);
	int e = 0;
	hz_small_cache_table_lock();
	if (want > table_end) {
		e = hz_os_map_at((void *)table_end, want - table_end, 0) ? -1 : 0;
		if (!e)
			table_end = want;
	}
	hz_small_cache_table_unlock();
	return e;
}

/* Fresh pages at the region's next address, aligned as asked; NULL where
 * the region is spent or another mapping holds the address. */
static void *extent_alloc(struct je_extent_hooks *h, void *at, size_t size, size_t align, _Bool *zero,
			  _Bool *commit, unsigned arena)
{
	(void)h, (void)arena;
	uintptr_t end = HZ_CACHE_BASE + HZ_CACHE_SPAN;
	uintptr_t cur = __atomic_load_n(&next, __ATOMIC_RELAXED), start;
	if (align < hz_page_size)
		align = hz_page_size;
	do {
		start = (cur + align - 1) & ~(uintptr_t)(align - 1);
		if ((at && (uintptr_t)at != start) || start + size > end || start + size < start)
			return NULL;
	} while (!__atomic_compare_exchange_n(&next, &cur, start + size, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	if (table_cover(start + size) || hz_os_map_at((void *)start, size, 0))
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

/* The classes' arena, made once: its mallocx flag, or -1 where refused.
 * Made under class 0's lock, which a fork's prepare takes first: no
 * child starts with the arena half made (a thread that finds it being
 * made waits on the lock, tens of microseconds). */
static int arena_start(void)
{
	int state = __atomic_load_n(&arena_state, __ATOMIC_ACQUIRE);
	if (!state) {
		hz_small_cache_lock(0);
		if (!(state = arena_state)) {
			hooks = (struct je_extent_hooks){extent_alloc,	    extent_dalloc,	 NULL, NULL, NULL,
							 extent_purge_lazy, extent_purge_forced, extent_split,
							 extent_merge};
			struct je_extent_hooks *h = &hooks;
			unsigned arena;
			size_t sz = sizeof arena;
			int ok = !hz_je_mallctl("arenas.create", &arena, &sz, &h, sizeof h);
			arena_flags = ok ? JE_ARENA(arena) : 0;
			arena_index = arena;
			state = ok ? 2 : -1;
			__atomic_store_n(&arena_state, state, __ATOMIC_RELEASE);
		}
		hz_small_cache_unlock(0);
	}
	return state == 2 ? arena_flags : -1;
}

/* A transfer cache's array's first room, 8 batches: a class that never
 * holds more never has more (512 batches of 8-byte blocks take 512 KiB). */
static uint32_t first_room(unsigned c)
{
	return (class_batches[c] < 8 ? class_batches[c] : 8) * class_max[c];
}

/* The class's transfer cache, at its first refill, under its lock: 1,
 * or -1 where there is no room for it. */
static int central_start(unsigned c)
{
	struct central *k = &central[c];
	k->held = hz_je_malloc((size_t)first_room(c) * sizeof(void *));
	k->room = k->held ? first_room(c) : 0;
	return k->held ? 1 : -1;
}

/* ---- between a thread's stacks and jemalloc ---- */

/* jemalloc's batch allocation (its mallctl experimental.batch_alloc, an
 * API of its own, of 5.3): many blocks of one class in one call, taken
 * from the thread cache's bin at once and, where it is empty, through one
 * mallocx that refills it from the arena's slabs. Asked for fewer blocks
 * than a slab holds (jemalloc's nregs), it never takes whole fresh slabs
 * past the arena's partly used ones. */
struct je_batch {
	void **ptrs;
	size_t num;
	size_t size;
	int flags;
};
static size_t batch_mib[2];
static int batch_ok; /* 1 where jemalloc has it and says each small class's nregs */
static uint32_t batch_most[HZ_CACHE_CLASSES]; /* blocks a call asks for; 0: one mallocx a block */

/* Up to n blocks of class c from jemalloc, the thread's explicit cache's
 * (no lock of the cache's): how many. */
static uint32_t take(unsigned c, void **to, uint32_t n)
{
	uint32_t i = 0;
	while (batch_ok && batch_most[c] && i < n) {
		struct je_batch b = {to + i, n - i < batch_most[c] ? n - i : batch_most[c], class_size[c], tc.flags};
		size_t got = 0, sz = sizeof got;
		if (hz_je_mallctlbymib(batch_mib, 2, &got, &sz, &b, sizeof b) || !got || got > b.num)
			break;
		i += (uint32_t)got;
		if (got < b.num) /* no memory, or jemalloc was busy in this thread */
			break;
	}
	for (; i < n; i++)
		if (!(to[i] = hz_je_mallocx(class_size[c], tc.flags)))
			break;
	return i;
}

/* Up to n blocks of class c from jemalloc into to[], each page's class
 * written: how many. */
static uint32_t fill(unsigned c, void **to, uint32_t n)
{
	uint32_t got = take(c, to, n), k = 0;
	for (uint32_t i = 0; i < got; i++) {
		void *p = to[i];
		uintptr_t off = (uintptr_t)p - HZ_CACHE_BASE;
		if (off >= HZ_CACHE_SPAN) { /* not the region's (jemalloc's own fallback): back */
			hz_je_dallocx(p, tc.flags);
			continue;
		}
		/* Its page's class, before any thread can free it: a page
		 * changes class only once every block on it is jemalloc's. */
		((uint8_t *)HZ_CACHE_TABLE)[off >> HZ_CACHE_PAGE_SHIFT] = (uint8_t)c;
		to[k++] = p;
	}
	__atomic_fetch_add(&filled, k, __ATOMIC_RELAXED);
	return k;
}

/* n blocks of class c back to jemalloc, with mallocx flags (the
 * thread's explicit cache, or none). Sized: a stack holds only blocks of
 * its class's usable size, and the size spares jemalloc's free the
 * lookup of the block's page in its radix tree, a cache miss a block
 * where they are freed in another order than they were taken. */
static void flush(unsigned c, void *const *from, uint32_t n, int flags)
{
	for (uint32_t i = 0; i < n; i++)
		hz_je_sdallocx(from[i], class_size[c], flags);
	__atomic_fetch_add(&flushed, n, __ATOMIC_RELAXED);
}

/* n blocks into the transfer cache where it has room for them: 1, else
 * 0 (the caller gives them back to jemalloc, out of the lock). Under the
 * lock; its array grown there (jemalloc's locks come after the class's,
 * as at its start). */
static int put(unsigned c, void *const *from, uint32_t n)
{
	struct central *k = &central[c];
	size_t bytes = (size_t)n * class_size[c];
	uint32_t most = class_batches[c] * class_max[c];
	if (k->state <= 0 || k->n + n > most)
		return 0;
	if (__atomic_add_fetch(&transfer_bytes, bytes, __ATOMIC_RELAXED) > TRANSFER_TOTAL) {
		__atomic_fetch_sub(&transfer_bytes, bytes, __ATOMIC_RELAXED);
		return 0;
	}
	/* The array grows only for blocks it will hold. */
	if (k->n + n > k->room) {
		uint32_t room = k->room * 2 < most ? k->room * 2 : most;
		void **held = hz_je_realloc(k->held, (size_t)room * sizeof(void *));
		if (!held) {
			__atomic_fetch_sub(&transfer_bytes, bytes, __ATOMIC_RELAXED);
			return 0;
		}
		k->held = held;
		k->room = room;
	}
	memcpy(k->held + k->n, from, n * sizeof(void *));
	k->n += n;
	return 1;
}

/* ---- a thread's start and exit ---- */

static void thread_exit(void *arg);

/* The thread's jemalloc thread cache of its own, made (lazy): once a
 * thread, by name (a lookup of a few hundred ns); where jemalloc refuses
 * (no memory), not asked again. */
static HZ_NOINLINE void tcache_on(void)
{
	_Bool on = 1;
	tc.tcache_on = 1;
	if (!hz_je_mallctl("thread.tcache.enabled", NULL, NULL, &on, sizeof on))
		__atomic_fetch_add(&tcaches, 1, __ATOMIC_RELAXED);
}

/* A refused cache's rule: made at the thread's first allocating call. */
static inline void first_call(void)
{
	if (hz_unlikely(!tc.tcache_on))
		tcache_on();
}

/* A thread's blocks are jemalloc's from now on (state 2): its own
 * jemalloc thread cache made (lazy). */
static void thread_refused(void)
{
	tc.state = 2;
	if (lazy && !tc.tcache_on)
		tcache_on();
}

/* A thread's first slow path: its exit key set, so that its destructor
 * runs in glibc's first round of them, before any other library's
 * destructor can make the thread's cache start (one that starts in the
 * last round would never be given back). Where the key cannot be set,
 * the thread's blocks are jemalloc's (state 2). */
static void thread_new(void)
{
	/* Gone while it is set: glibc's pthread_setspecific allocates for a
	 * key past its first 32, and that call must not come back here. */
	tc.state = 2;
	if (!pthread_setspecific(exit_key, &tc))
		tc.state = 0, tc.keyed = 1;
	else
		thread_refused();
}

/* Stacks for this thread; else (no arena, no memory) its blocks are
 * jemalloc's (state 2). */
static void thread_start(void)
{
	tc.state = 2;
	int arena = arena_start();
	size_t sz = sizeof tc.tcache;
	if (arena < 0 || hz_je_mallctl("tcache.create", &tc.tcache, &sz, NULL, 0)) {
		thread_refused();
		return;
	}
	tc.flags = arena | JE_TCACHE(tc.tcache);
	struct hz_cache_calls *calls = hz_je_calloc(1, sizeof *calls + stack_slots * sizeof(void *));
	if (!calls) {
		hz_je_mallctl("tcache.destroy", NULL, NULL, &tc.tcache, sizeof tc.tcache);
		thread_refused();
		return;
	}
	void **slot = tc.stacks = (void **)(calls + 1);
	tc.calls = calls;
	for (unsigned c = 0; c < classes; c++) {
		struct bin *b = &tc.bin[c];
		b->top = b->low = slot;
		b->high = slot += 2 * class_max[c];
	}
	hz_small_cache_link(calls);
	tc.state = 1;
}

/* A slow path's call while the thread is new, asking for size bytes (0:
 * a free): its exit key at the first, its stacks at its WARMth call,
 * once its calls asked for WARM_BYTES, or at its WARM_STARTEDth once the
 * process has the arena. */
static void thread_warm(size_t size)
{
	if (tc.state == 0 && !tc.keyed)
		thread_new();
	if (tc.state != 0)
		return;
	++tc.warm;
	tc.warm_bytes += size;
	if (lazy && !tc.tcache_on && size && tc.warm >= TCACHE_AFTER)
		tcache_on();
	if (tc.warm >= WARM || tc.warm_bytes >= WARM_BYTES ||
	    (tc.warm >= WARM_STARTED && __atomic_load_n(&arena_state, __ATOMIC_RELAXED) == 2))
		thread_start();
}

/* Before a call jemalloc serves past the stacks (a size above the
 * cache's classes, a block outside the region, realloc, flags of its
 * own): the thread's jemalloc thread cache made now (lazy), as jemalloc
 * would have made it at the thread's first call (without it, each of
 * those takes a bin's lock or jemalloc's extent code). Its exit key set
 * first, so that none is made after its exit has begun (state 2: jemalloc
 * may have cleaned the thread's data up already). */
static HZ_NOINLINE void je_first_slow(void)
{
	if (!installed) { /* refused: as the lone functions, at the first call */
		first_call();
		return;
	}
	if (tc.state == 0 && !tc.keyed)
		thread_new();
	/* Caching too: a thread that started its stacks before its
	 * TCACHE_AFTERth call (WARM_BYTES) or by its frees has none yet. */
	if (tc.state != 2 && !tc.tcache_on)
		tcache_on();
}

static inline void je_first(void)
{
	if (hz_unlikely(lazy && !tc.tcache_on))
		je_first_slow();
}

/* A block outside the region freed (lazy): the thread's exit key set at
 * its first, so that a thread jemalloc sees first through frees gets no
 * jemalloc cache once its exit has begun. Frees alone make none: jemalloc
 * keeps the data of a thread that only frees minimal, without a cache. */
static inline void je_seen(void)
{
	if (hz_unlikely(lazy && !tc.keyed && tc.state == 0))
		thread_new();
}

static HZ_NOINLINE void je_free(void *p)
{
	je_seen();
	hz_je_free(p);
}

/* Gives back every block of the thread's stacks: whole batches to the
 * transfer caches, the rest to jemalloc. */
static void give_back(void)
{
	for (unsigned c = 0; c < classes; c++) {
		struct bin *b = &tc.bin[c];
		uint32_t n = (uint32_t)(b->top - b->low), m = class_max[c];
		if (!n)
			continue;
		b->top = b->low;
		hz_small_cache_lock(c);
		for (; n >= m && put(c, b->low + n - m, m); n -= m)
			;
		hz_small_cache_unlock(c);
		flush(c, b->low, n, tc.flags);
	}
	for (unsigned c = big_from; c < classes; c++)
		if (tc.big[c - big_from]) {
			flush(c, &tc.big[c - big_from], 1, tc.flags);
			tc.big[c - big_from] = NULL;
		}
	tc.big_held = 0;
}

/* From now on the thread's blocks are jemalloc's (a destructor of
 * another library's may still allocate). */
static void thread_exit(void *arg)
{
	(void)arg;
	tc.state = 2;
	if (!tc.stacks) /* never started: nothing held, not linked */
		return;
	give_back();
	for (unsigned c = 0; c < classes; c++)
		tc.bin[c] = (struct bin){NULL, NULL, NULL};
	tc.stacks = NULL;
	hz_je_mallctl("tcache.destroy", NULL, NULL, &tc.tcache, sizeof tc.tcache);
	hz_small_cache_unlink(tc.calls);
	hz_je_free(tc.calls);
	tc.calls = NULL;
}

/* ---- the slow paths ---- */

/* malloc(size) where class c's stack is empty: a batch from the
 * transfer cache, or from jemalloc. */
static HZ_NOINLINE void *refill(size_t size, unsigned c)
{
	if (hz_unlikely(tc.state != 1)) {
		thread_warm(size);
		if (tc.state != 1)
			return hz_je_malloc(size);
	}
	struct bin *b = &tc.bin[c];
	struct central *k = &central[c];
	uint32_t m = class_max[c], n = 0;
	hz_small_cache_lock(c);
	if (!k->state)
		k->state = central_start(c);
	if (k->n >= m) {
		k->n -= m;
		__atomic_fetch_sub(&transfer_bytes, (size_t)m * class_size[c], __ATOMIC_RELAXED);
		memcpy(b->low, k->held + k->n, m * sizeof(void *));
		n = m;
	}
	int ready = k->state > 0;
	hz_small_cache_unlock(c);
	if (!n && ready)
		n = fill(c, b->low, m);
	if (!n)
		return hz_je_malloc(size);
	b->top = b->low + n - 1;
	tc.calls->calls[c]++;
	return *b->top;
}

/* A big class's block freed: kept in its class's slot, the one there
 * given back (p is the likelier in cache); past BIG_HELD, p given back. */
static void big_keep(void *p, unsigned c)
{
	void **slot = &tc.big[c - big_from], *back = p;
	if (*slot) {
		back = *slot;
		*slot = p;
	} else if (tc.big_held + class_size[c] <= BIG_HELD) {
		*slot = p;
		tc.big_held += class_size[c];
		return;
	}
	flush(c, &back, 1, tc.flags);
}

/* free(p) of class c where its stack is full (or the thread's stacks
 * are not set up): its older batch goes to the transfer cache. */
static HZ_NOINLINE void overflow(void *p, unsigned c)
{
	if (c == NO_CLASS) {
		je_free(p);
		return;
	}
	if (hz_unlikely(tc.state != 1)) {
		thread_warm(0);
		if (tc.state != 1) {
			hz_je_free(p);
			return;
		}
	}
	if (c >= big_from) {
		big_keep(p, c);
		return;
	}
	struct bin *b = &tc.bin[c];
	if (b->top != b->high) { /* the thread's stacks just set up */
		*b->top++ = p;
		return;
	}
	uint32_t m = class_max[c];
	hz_small_cache_lock(c);
	int kept = put(c, b->low, m);
	hz_small_cache_unlock(c);
	if (!kept)
		flush(c, b->low, m, tc.flags);
	memmove(b->low, b->low + m, m * sizeof(void *));
	b->low[m] = p;
	b->top = b->low + m + 1;
}

/* ---- the table's functions ---- */

static inline unsigned size_class(size_t size)
{
	return class_of[(size + 7) >> 3];
}

/* A size's big class, for sizes above HZ_CACHE_MAX up to big_max. */
static inline unsigned big_class(size_t size)
{
	return big_of[(size + (1u << BIG_SHIFT) - 1) >> BIG_SHIFT];
}

/* A size above HZ_CACHE_MAX: a big class's, the block the thread kept,
 * else one from the arena. */
static HZ_NOINLINE void *big_malloc(size_t size)
{
	je_first();
	if (size > big_max)
		return hz_je_malloc(size);
	if (hz_unlikely(tc.state != 1)) {
		thread_warm(size);
		if (tc.state != 1)
			return hz_je_malloc(size);
	}
	unsigned c = big_class(size);
	void *p = tc.big[c - big_from];
	if (p) {
		tc.big[c - big_from] = NULL;
		tc.big_held -= class_size[c];
		tc.calls->calls[c]++;
		return p;
	}
	/* jemalloc counts this one (hz_small_cache_split). */
	return fill(c, &p, 1) ? p : hz_je_malloc(size);
}

static void *cache_malloc(size_t size)
{
	if (hz_likely(size <= HZ_CACHE_MAX)) {
		unsigned c = size_class(size);
		struct bin *b = &tc.bin[c];
		void **t = b->top;
		if (hz_likely(t != b->low)) {
			b->top = --t;
			tc.calls->calls[c]++;
			return *t;
		}
		return refill(size, c);
	}
	return big_malloc(size);
}

static void cache_free(void *p)
{
	uintptr_t off = (uintptr_t)p - HZ_CACHE_BASE;
	if (hz_likely(off < HZ_CACHE_SPAN)) {
		unsigned c = ((const uint8_t *)HZ_CACHE_TABLE)[off >> HZ_CACHE_PAGE_SHIFT];
		struct bin *b = &tc.bin[c];
		void **t = b->top;
		if (hz_likely(t != b->high)) {
			*t = p;
			b->top = t + 1;
			return;
		}
		overflow(p, c);
		return;
	}
	je_free(p);
}

/* The whole block cleared, as jemalloc's calloc leaves it. */
static void *cache_calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total) || total > HZ_CACHE_MAX) {
		je_first();
		return hz_je_calloc(n, size);
	}
	void *p = cache_malloc(total);
	return p ? hz_fill_counted(p, 0, class_size[size_class(total)]) : NULL;
}

/* After jemalloc's realloc kept or put a block in the region: its
 * page's class as its size now is. jemalloc resizes a block of its large
 * classes (from 16 KiB) in place, whose page then recorded the old size:
 * a block shrunk so, pushed on its old class's stack, would be handed
 * out for a size it has not. Small blocks never change class in place. */
static void reclass(void *q)
{
	uintptr_t off = (uintptr_t)q - HZ_CACHE_BASE;
	if (off >= HZ_CACHE_SPAN)
		return;
	size_t u = hz_je_malloc_usable_size(q);
	unsigned c = u <= HZ_CACHE_MAX ? size_class(u)
		     : u <= big_max    ? big_class(u)
				       : NO_CLASS;
	if (c != NO_CLASS && class_size[c] != u)
		c = NO_CLASS;
	uint8_t *at = &((uint8_t *)HZ_CACHE_TABLE)[off >> HZ_CACHE_PAGE_SHIFT];
	if (*at != c)
		*at = (uint8_t)c;
}

/* Whether realloc's q, from p, may need its page classed again: a block
 * that moved, or one of a large class (resized in place). */
static inline int moved_or_large(const void *p, const void *q)
{
	uintptr_t off = (uintptr_t)q - HZ_CACHE_BASE;
	return off < HZ_CACHE_SPAN &&
	       (p != q || ((const uint8_t *)HZ_CACHE_TABLE)[off >> HZ_CACHE_PAGE_SHIFT] >= small_classes);
}

static void *cache_realloc(void *p, size_t size)
{
	je_first();
	void *q = hz_je_realloc(p, size);
	if (q && moved_or_large(p, q))
		reclass(q);
	return q;
}

static void *cache_rallocx(void *p, size_t size, int flags)
{
	je_first();
	void *q = hz_je_rallocx(p, size, flags);
	if (q && moved_or_large(p, q))
		reclass(q);
	return q;
}

static size_t cache_xallocx(void *p, size_t size, size_t extra, int flags)
{
	size_t u = hz_je_xallocx(p, size, extra, flags);
	if (moved_or_large(p, p))
		reclass(p);
	return u;
}

/* An alignment alone, no larger than jemalloc's quantum (16 B), is the
 * cache's: every class from the alignment up is a multiple of it, and
 * its blocks aligned so (memalign(8 or 16), two calls in three of
 * rptest's, are malloc's). Other flags are jemalloc's. */
static void *cache_mallocx(size_t size, int flags)
{
	if (!(flags & ~HZ_JE_LG_ALIGN_MASK)) {
		size_t align = HZ_JE_ALIGN_OF(flags);
		if (align <= quantum)
			return cache_malloc(size < align ? align : size);
	}
	je_first();
	return hz_je_mallocx(size, flags);
}

/* An alignment alone says nothing free needs (a block's class is its
 * page's, or jemalloc's own for a block outside the region): free's.
 * A cache or an arena named is jemalloc's (C++'s sized aligned delete
 * passes the alignment). */
static void cache_dallocx(void *p, int flags)
{
	if (flags & ~HZ_JE_LG_ALIGN_MASK) {
		je_seen();
		hz_je_dallocx(p, flags);
	} else {
		cache_free(p);
	}
}

static void cache_sdallocx(void *p, size_t size, int flags)
{
	if (flags & ~HZ_JE_LG_ALIGN_MASK) {
		je_seen();
		hz_je_sdallocx(p, size, flags);
	} else {
		cache_free(p);
	}
}

/* Whether the program's MALLOC_CONF asks jemalloc for what a cache in
 * front of it would undo: heap profiling (prof:true; it would sample
 * the batches the cache takes, not the program's calls), blocks zeroed
 * or junk-filled at each malloc or free (zero:true, junk:...; a block
 * the cache hands back again is neither), or no thread caches at all
 * (tcache:false). An option jemalloc was built without reads as off. */
static int conf_refuses(int lazy_tcache)
{
	static const char *const flags[] = {"opt.prof", "opt.zero"};
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		_Bool on = 0;
		size_t sz = sizeof on;
		if (!hz_je_mallctl(flags[i], &on, &sz, NULL, 0) && on)
			return 1;
	}
	_Bool tcache = 1;
	size_t sz = sizeof tcache;
	if (!lazy_tcache && !hz_je_mallctl("opt.tcache", &tcache, &sz, NULL, 0) && !tcache)
		return 1;
	const char *junk = NULL;
	sz = sizeof junk;
	return !hz_je_mallctl("opt.junk", &junk, &sz, NULL, 0) && junk && strcmp(junk, "false");
}

/* The batch call's mib, and per class how many blocks one call asks for:
 * for jemalloc's small classes, fewer than a slab holds; for its large
 * ones, a batch (taken from the thread cache's bin, then one a mallocx). */
static void batch_start(void)
{
	const char *v = NULL;
	size_t len = 2, sz = sizeof v;
	/* Where jemalloc's small classes are not known (arenas.nbins past the
	 * cache's classes: pages of 64 KiB), a batch could take fresh slabs. */
	if (!small_classes || hz_je_mallctl("version", &v, &sz, NULL, 0) || !v || strncmp(v, "5.3.", 4) ||
	    hz_je_mallctlnametomib("experimental.batch_alloc", batch_mib, &len) || len != 2)
		return;
	for (unsigned c = 0; c < classes; c++) {
		uint32_t nregs = LIST_MAX + 1;
		if (c < small_classes) {
			char name[48];
			snprintf(name, sizeof name, "arenas.bin.%u.nregs", c);
			sz = sizeof nregs;
			if (hz_je_mallctl(name, &nregs, &sz, NULL, 0))
				return;
		}
		batch_most[c] = nregs > 1 && c < big_from ? nregs - 1 : 0;
	}
	batch_ok = 1;
}

/* Functions of f in e's place, those f has (usable and nallocx stay
 * jemalloc's). Composed apart and stored whole, each field from one
 * function to another: a signal handler interrupting the allocator's
 * start on its thread never finds one NULL. */
static void place(struct hz_small_engine *e, const struct hz_small_engine *f)
{
	struct hz_small_engine n = *f;
	n.usable = e->usable;
	n.nallocx = e->nallocx;
	n.jemalloc = e->jemalloc;
	if (!n.xallocx)
		n.xallocx = e->xallocx;
	*e = n;
}

/* Where jemalloc was started with no thread caches of its own for the
 * cache (lazy) and the cache is refused after all: jemalloc's functions,
 * each thread's jemalloc cache made at its first call (first_call), as
 * jemalloc would have made it. */

static void *lone_malloc(size_t size)
{
	first_call();
	return hz_je_malloc(size);
}

static void *lone_calloc(size_t n, size_t size)
{
	first_call();
	return hz_je_calloc(n, size);
}

static void lone_free(void *p) /* none made: see je_free */
{
	hz_je_free(p);
}

static void *lone_realloc(void *p, size_t size)
{
	first_call();
	return hz_je_realloc(p, size);
}

static void *lone_mallocx(size_t size, int flags)
{
	first_call();
	return hz_je_mallocx(size, flags);
}

static void *lone_rallocx(void *p, size_t size, int flags)
{
	first_call();
	return hz_je_rallocx(p, size, flags);
}

static void lone_dallocx(void *p, int flags)
{
	hz_je_dallocx(p, flags);
}

static void lone_sdallocx(void *p, size_t size, int flags)
{
	hz_je_sdallocx(p, size, flags);
}

/* The cache refused: -1, and where lazy, the functions above in
 * jemalloc's place. */
static int refuse(struct hz_small_engine *e)
{
	static const struct hz_small_engine lone = {
		.malloc = lone_malloc,	 .calloc = lone_calloc,	  .realloc = lone_realloc,   .free = lone_free,
		.mallocx = lone_mallocx, .rallocx = lone_rallocx, .dallocx = lone_dallocx, .sdallocx = lone_sdallocx,
	};
	if (lazy)
		place(e, &lone);
	return -1;
}

int hz_small_cache_install(struct hz_small_engine *e, int lazy_tcache)
{
	if (!e->jemalloc) /* not called so: jemalloc is started only to serve */
		return -1;
	size_t len = 2;
	lazy = lazy_tcache;
	if (lazy && (hz_je_mallctlnametomib("opt.tcache", opt_tcache_mib, &len) || len != 2))
		opt_tcache_mib[0] = opt_tcache_mib[1] = SIZE_MAX;
	if (conf_refuses(lazy))
		return refuse(e);
	/* jemalloc's classes up to HZ_CACHE_MAX, from its own rounding. */
	size_t last = 0;
	for (size_t i = 0; i <= HZ_CACHE_MAX >> 3; i++) {
		size_t s = hz_je_nallocx(i ? i << 3 : 1, 0);
		if (s != last) {
			if (classes == NO_CLASS || s > HZ_CACHE_MAX)
				return refuse(e);
			class_size[classes++] = (uint32_t)s;
			last = s;
		}
		class_of[i] = (uint8_t)(classes - 1);
	}
	/* jemalloc's small classes are its first nbins; where it does not
	 * say, every class is treated as one realloc may resize in place. */
	unsigned nbins = 0;
	size_t nsz = sizeof nbins;
	int said = !hz_je_mallctl("arenas.nbins", &nbins, &nsz, NULL, 0);
	small_classes = !said || nbins > classes ? 0 : nbins;
	large_from = !said || nbins > classes ? classes : nbins;
	/* And the big classes, where jemalloc says every one is a large
	 * class of its (with pages of 64 KiB, its slabs' classes go on past
	 * 64 KiB), each a multiple of 16 KiB (else none): big_of[i] is the
	 * first class from i << BIG_SHIFT, and so of every size above
	 * (i - 1) << BIG_SHIFT. */
	unsigned first_big = classes;
	for (size_t i = (HZ_CACHE_MAX >> BIG_SHIFT) + 1; small_classes && i <= HZ_CACHE_BIG_MAX >> BIG_SHIFT; i++) {
		size_t s = hz_je_nallocx(i << BIG_SHIFT, 0);
		if (s != last) {
			if (classes == NO_CLASS || classes - first_big == BIG_CLASSES || s > HZ_CACHE_BIG_MAX ||
			    s & ((1u << BIG_SHIFT) - 1)) {
				classes = first_big;
				break;
			}
			class_size[classes++] = (uint32_t)s;
			last = s;
		}
		big_of[i] = (uint8_t)(classes - 1);
	}
	if (classes > first_big) {
		big_from = first_big;
		big_max = HZ_CACHE_BIG_MAX;
	}
	size_t q = 0, qsz = sizeof q;
	if (!hz_je_mallctl("arenas.quantum", &q, &qsz, NULL, 0) && q && !(q & (q - 1)))
		quantum = q;
	for (unsigned c = 0; c < classes; c++) {
		if (c >= big_from) /* no stack, no transfer cache: big_keep's slot */
			continue;
		uint32_t m = LIST_BYTES / class_size[c];
		class_max[c] = m < LIST_MIN ? LIST_MIN : m > LIST_MAX ? LIST_MAX : m;
		uint32_t l = TRANSFER_BYTES / (class_max[c] * class_size[c]);
		class_batches[c] = l < TRANSFER_BATCHES ? l : TRANSFER_BATCHES;
		stack_slots += 2 * class_max[c];
	}
	batch_start();
	if (pthread_key_create(&exit_key, thread_exit))
		return refuse(e);
	static const struct hz_small_engine cache = {
		.malloc = cache_malloc,	  .calloc = cache_calloc,   .realloc = cache_realloc, .free = cache_free,
		.mallocx = cache_mallocx, .rallocx = cache_rallocx, .xallocx = cache_xallocx, .dallocx = cache_dallocx,
		.sdallocx = cache_sdallocx,
	};
	installed = 1;
	place(e, &cache);
	return 0;
}

void hz_small_cache_trim(void)
{
	if (!classes)
		return;
	/* The calling thread's cache ends as at its exit: its stacks given
	 * back and its explicit jemalloc cache destroyed, which jemalloc's
	 * own garbage collection never reaches (a thread that once used
	 * every large class holds up to 4 MiB of those to 64 KiB there and
	 * on its stacks, and 24 MiB of the big classes'). It
	 * starts again at its next slow path, past its warm-up. */
	if (tc.state == 1) {
		thread_exit(NULL);
		tc.state = 0;
	}
	/* Straight to the arena: the blocks leave every cache. */
	int flags = arena_flags | JE_TCACHE_NONE;
	for (unsigned c = 0; c < classes; c++) {
		struct central *k = &central[c];
		hz_small_cache_lock(c);
		flush(c, k->held, k->n, flags);
		__atomic_fetch_sub(&transfer_bytes, (size_t)k->n * class_size[c], __ATOMIC_RELAXED);
		k->n = 0;
		/* And its array back to its first size. */
		uint32_t first = first_room(c);
		void **held = k->room > first ? hz_je_realloc(k->held, (size_t)first * sizeof(void *)) : NULL;
		if (held) {
			k->held = held;
			k->room = first;
		}
		hz_small_cache_unlock(c);
	}
}

int hz_small_cache_ctl(const char *name, const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
		       void *newp)
{
	if (!lazy)
		return -1;
	je_first();
	int opt = name ? !strcmp(name, "opt.tcache")
		       : mib && miblen == 2 && mib[0] == opt_tcache_mib[0] && mib[1] == opt_tcache_mib[1];
	if (!opt || newp || !oldp || !oldlenp || *oldlenp != sizeof(_Bool))
		return -1;
	*(_Bool *)oldp = 1;
	return 0;
}

void hz_small_cache_je_first(void)
{
	je_first();
}

int hz_small_cache_arena(void)
{
	return __atomic_load_n(&arena_state, __ATOMIC_ACQUIRE) == 2 ? (int)arena_index : -1;
}

/* The cache's arena's requests of the big classes: the blocks a thread
 * took that it had not kept, which its explicit jemalloc cache did not
 * serve either (those count in jemalloc's figures). jemalloc's figures
 * leave the cache's arena out (small.c), and only the kept ones count
 * as the cache's calls: so each block counts once. */
static uint64_t big_requests(void)
{
	size_t m[6], len = 6;
	uint64_t sum = 0;
	if (big_from >= classes || __atomic_load_n(&arena_state, __ATOMIC_ACQUIRE) != 2 ||
	    hz_je_mallctlnametomib("stats.arenas.0.lextents.0.nrequests", m, &len) || len != 6)
		return 0;
	m[2] = arena_index;
	for (unsigned c = big_from; c < classes; c++) {
		uint64_t v = 0;
		size_t sz = sizeof v;
		m[4] = c - large_from;
		if (!hz_je_mallctlbymib(m, len, &v, &sz, NULL, 0))
			sum += v;
	}
	return sum;
}

void hz_small_cache_split(uint64_t *small, uint64_t *large)
{
	uint64_t calls[HZ_CACHE_CLASSES];
	*small = *large = 0;
	if (!classes)
		return;
	hz_small_cache_calls(calls);
	for (unsigned c = 0; c < classes; c++)
		*(c < large_from ? small : large) += calls[c];
	*large += big_requests();
}

void hz_small_cache_counters(hz_counter_fn fn, void *arg)
{
	fn(arg, "malloc.small.cache_filled", __atomic_load_n(&filled, __ATOMIC_RELAXED), 0);
	fn(arg, "malloc.small.cache_flushed", __atomic_load_n(&flushed, __ATOMIC_RELAXED), 0);
	fn(arg, "malloc.small.thread_tcaches", __atomic_load_n(&tcaches, __ATOMIC_RELAXED), 0);
	fn(arg, "malloc.small.transfer_bytes", __atomic_load_n(&transfer_bytes, __ATOMIC_RELAXED), 1);
}
