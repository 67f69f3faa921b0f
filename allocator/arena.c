/* Arenas (arena.h): the calling thread's arena, its chunks, the blocks in
 * them, its counters. */
#include "../obs/counters.h"
#include "arena.h"
#include "background.h"
#include "huge.h"
#include "registry.h"

#define ARENA_INIT {.lock = PTHREAD_MUTEX_INITIALIZER, .zeroer_done = PTHREAD_COND_INITIALIZER}
struct hz_arena hz_arenas[HZ_ARENAS] = {ARENA_INIT, ARENA_INIT, ARENA_INIT, ARENA_INIT};
int hz_hugetlb;
static unsigned next_arena;
static HZ_TLS int my_arena = -1;

struct hz_arena *hz_arena_of_thread(void)
{
	if (hz_unlikely(my_arena < 0))
		my_arena = (int)(__atomic_fetch_add(&next_arena, 1, __ATOMIC_RELAXED) % HZ_ARENAS);
	return &hz_arenas[my_arena];
}

void hz_arena_count_alloc(struct hz_arena *a, size_t bytes, size_t fresh, int zero)
{
	a->nalloc++;
	if (fresh)
		a->reserve_misses++;
	else
		a->reserve_hits++;
	if (zero) {
		a->ncalloc++;
		a->calloc_bytes += bytes;
	}
}

size_t hz_arena_count_purge(struct hz_arena *a, const struct hz_release_result *r, size_t bytes)
{
	if (r->ranges) {
		a->purges++;
		a->purge_ranges += r->ranges;
		a->purge_syscalls += r->syscalls;
		a->purge_fallbacks += r->fallbacks;
	}
	a->purged += bytes;
	return bytes;
}

/* A new chunk for arena a, registered; NULL when memory is out. Called
 * without the lock: mapping it, and timing its first huge page
 * (fresh.h), may take milliseconds. */
static struct hz_chunk *new_chunk(struct hz_arena *a)
{
	/* The chunk's own metadata (about 100 KiB) comes from the OS too. */
	size_t meta = hz_round_up(sizeof(struct hz_chunk), hz_page_size);
	void *m;
	if (hz_os_map(meta, hz_page_size, &m))
		return NULL;
	struct hz_chunk *c = m;
	if (hz_chunk_init(c, hz_hugetlb)) {
		hz_os_unmap(c, meta);
		return NULL;
	}
	c->owner = (unsigned)(a - hz_arenas);
	if (hz_reg_set(c->base, HZ_CHUNK_SIZE, (uintptr_t)c)) {
		hz_chunk_destroy(c);
		hz_os_unmap(c, meta);
		return NULL;
	}
	return c;
}

/* Doubles a's chunk array (lock held; every reader holds it): 0, or -1
 * when it cannot be mapped. */
static int grow_array(struct hz_arena *a)
{
	unsigned cap = a->cap ? a->cap * 2 : 64;
	void *m;
	if (hz_os_map(hz_round_up(cap * sizeof *a->chunks, hz_page_size), hz_page_size, &m))
		return -1;
	struct hz_chunk **n = m;
	for (unsigned i = 0; i < a->nchunks; i++)
		n[i] = a->chunks[i];
	if (a->chunks)
		hz_os_unmap(a->chunks, hz_round_up(a->cap * sizeof *a->chunks, hz_page_size));
	a->chunks = n;
	a->cap = cap;
	return 0;
}

/* Adds c to a (lock held), or gives it back when the array cannot grow:
 * 0 or -1. */
static int add_chunk(struct hz_arena *a, struct hz_chunk *c)
{
	if (a->nchunks == a->cap && grow_array(a)) {
		hz_reg_set(c->base, HZ_CHUNK_SIZE, 0);
		hz_chunk_destroy(c);
		hz_os_unmap(c, hz_round_up(sizeof(struct hz_chunk), hz_page_size));
		return -1;
	}
	if (hz_hugetlb) {
		a->hugetlb_chunks += c->hugetlb;
		a->hugetlb_fallbacks += !c->hugetlb;
	}
	a->chunks[a->nchunks++] = c;
	return 0;
}

int hz_arena_grow(struct hz_arena *a)
{
	struct hz_chunk *n = new_chunk(a);
	if (!n)
		return -1;
	pthread_mutex_lock(&a->lock);
	int r = add_chunk(a, n);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* A run of npages in a's chunks, first fit (lock held); NULL when none.
 * Away from the zeroer's piece where another run in memory fits: then no
 * thread waits for it (background.h). */
static void *fit(struct hz_arena *a, size_t npages, struct hz_chunk **cp, size_t *clean_before)
{
	for (int avoid = 1; avoid >= 0; avoid--)
		for (unsigned i = 0; i < a->nchunks; i++) {
			void *p;
			struct hz_chunk *c = a->chunks[i];
			*clean_before = c->clean_free;
			if (c->free_pages >= npages && (p = hz_chunk_alloc_avoiding(c, npages, avoid))) {
				*cp = c;
				return p;
			}
		}
	return NULL;
}

/* A run of npages in a, a new chunk mapped when none has room and grow
 * is set; NULL when none. */
static void *alloc_in(struct hz_arena *a, size_t npages, int zero, int grow)
{
	struct hz_chunk *c = NULL;
	size_t clean_before = 0;
	pthread_mutex_lock(&a->lock);
	void *p = fit(a, npages, &c, &clean_before);
	if (!p && grow) {
		pthread_mutex_unlock(&a->lock);
		hz_arena_grow(a);
		pthread_mutex_lock(&a->lock);
		p = fit(a, npages, &c, &clean_before); /* another thread may have taken or added room */
	}
	struct hz_zero_plan plan;
	if (p) {
		size_t i = (size_t)((unsigned char *)p - c->base) >> HZ_PAGE_SHIFT;
		size_t fresh = c->taken_fresh << HZ_PAGE_SHIFT;
		/* The reserve (chunk pages) refills up to what chunks handed out
		 * not in memory; an arena's first block says nothing of what
		 * comes next (a program that recycles it wants no reserve). */
		if (a->nalloc)
			a->missed += fresh;
		if (fresh || c->clean_free != clean_before)
			hz_zeroer_want = 1;
		hz_zeroer_collide(a, c, i, i + npages, NULL);
		if (zero) {
			hz_chunk_zero_plan(c, p, &plan);
			a->known_zero += plan.known_zero;
			a->cleared_caller += (npages << HZ_PAGE_SHIFT) - plan.known_zero;
		}
		hz_chunk_mark_dirty(c, p); /* the program writes it from now on */
		a->allocated += npages << HZ_PAGE_SHIFT;
		hz_arena_count_alloc(a, npages << HZ_PAGE_SHIFT, fresh, zero);
	}
	pthread_mutex_unlock(&a->lock);
	if (p && zero) /* outside the lock: the block is ours alone */
		hz_chunk_zero_runs(c, &plan, p);
	return p;
}

void *hz_arena_alloc(size_t npages, int zero)
{
	struct hz_arena *home = hz_arena_of_thread();
	void *p = alloc_in(home, npages, zero, 1);
	/* No chunk could be mapped: room in the other arenas' chunks. */
	for (unsigned i = 1; !p && i < HZ_ARENAS; i++)
		p = alloc_in(&hz_arenas[((unsigned)(home - hz_arenas) + i) % HZ_ARENAS], npages, zero, 0);
	return p;
}

size_t hz_arena_usable(struct hz_chunk *c, const void *p)
{
	struct hz_arena *a = hz_arena_of_chunk(c);
	pthread_mutex_lock(&a->lock);
	size_t n = hz_chunk_block_pages(c, p);
	pthread_mutex_unlock(&a->lock);
	return n << HZ_PAGE_SHIFT;
}

int hz_arena_free(struct hz_chunk *c, void *p)
{
	struct hz_arena *a = hz_arena_of_chunk(c);
	pthread_mutex_lock(&a->lock);
	size_t n = hz_chunk_free(c, p);
	if (n) {
		a->nfree++;
		c->freed = ++a->frees;
		a->allocated -= n << HZ_PAGE_SHIFT;
		hz_arena_bound(a);
	}
	pthread_mutex_unlock(&a->lock);
	return n ? 0 : -1;
}

int hz_arena_resize(struct hz_chunk *c, void *p, size_t old, size_t size)
{
	struct hz_arena *a = hz_arena_of_chunk(c);
	size_t np = hz_round_up(size, HZ_PAGE) >> HZ_PAGE_SHIFT;
	pthread_mutex_lock(&a->lock);
	int ok = hz_chunk_resize(c, p, np) == 0;
	if (ok) {
		size_t i = (size_t)((unsigned char *)p - c->base) >> HZ_PAGE_SHIFT;
		if (np << HZ_PAGE_SHIFT > old) /* the pages taken after it */
			hz_zeroer_collide(a, c, i + (old >> HZ_PAGE_SHIFT), i + np, NULL);
		a->allocated = a->allocated - old + (np << HZ_PAGE_SHIFT);
	}
	pthread_mutex_unlock(&a->lock);
	return ok ? 0 : -1;
}
