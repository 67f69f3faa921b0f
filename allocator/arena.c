/* Arenas (arena.h): the calling thread's arena, its chunks, the blocks in
 * them, its counters, and fork. */
#include "../obs/counters.h"
#include "arena.h"
#include "huge.h"
#include "registry.h"

struct hz_arena hz_arenas[HZ_ARENAS] = {
	{.lock = PTHREAD_MUTEX_INITIALIZER}, {.lock = PTHREAD_MUTEX_INITIALIZER},
	{.lock = PTHREAD_MUTEX_INITIALIZER}, {.lock = PTHREAD_MUTEX_INITIALIZER},
};
int hz_hugetlb;
static unsigned next_arena;
static HZ_TLS int my_arena = -1;

struct hz_arena *hz_arena_of_thread(void)
{
	if (hz_unlikely(my_arena < 0))
		my_arena = (int)(__atomic_fetch_add(&next_arena, 1, __ATOMIC_RELAXED) % HZ_ARENAS);
	return &hz_arenas[my_arena];
}

void hz_arena_count_alloc(struct hz_arena *a, size_t bytes, int zero)
{
	a->nalloc++;
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

/* Adds c to a (lock held), or gives it back when a is full. */
static void add_chunk(struct hz_arena *a, struct hz_chunk *c)
{
	if (a->nchunks == HZ_ARENA_CHUNKS) {
		hz_reg_set(c->base, HZ_CHUNK_SIZE, 0);
		hz_chunk_destroy(c);
		hz_os_unmap(c, hz_round_up(sizeof(struct hz_chunk), hz_page_size));
		return;
	}
	if (hz_hugetlb) {
		a->hugetlb_chunks += c->hugetlb;
		a->hugetlb_fallbacks += !c->hugetlb;
	}
	a->chunks[a->nchunks++] = c;
}

/* A run of npages in a's chunks, first fit (lock held); NULL when none. */
static void *fit(struct hz_arena *a, size_t npages, struct hz_chunk **cp)
{
	for (unsigned i = 0; i < a->nchunks; i++) {
		void *p;
		if (a->chunks[i]->free_pages >= npages && (p = hz_chunk_alloc(a->chunks[i], npages))) {
			*cp = a->chunks[i];
			return p;
		}
	}
	return NULL;
}

void *hz_arena_alloc(size_t npages, int zero)
{
	struct hz_arena *a = hz_arena_of_thread();
	struct hz_chunk *c = NULL;
	pthread_mutex_lock(&a->lock);
	void *p = fit(a, npages, &c);
	if (!p && a->nchunks < HZ_ARENA_CHUNKS) {
		pthread_mutex_unlock(&a->lock);
		struct hz_chunk *n = new_chunk(a);
		pthread_mutex_lock(&a->lock);
		if (n)
			add_chunk(a, n);
		p = fit(a, npages, &c); /* another thread may have taken or added room */
	}
	struct hz_zero_plan plan;
	if (p) {
		if (zero) {
			hz_chunk_zero_plan(c, p, &plan);
			a->known_zero += plan.known_zero;
		}
		hz_chunk_mark_dirty(c, p); /* the program writes it from now on */
		a->allocated += npages << HZ_PAGE_SHIFT;
		hz_arena_count_alloc(a, npages << HZ_PAGE_SHIFT, zero);
	}
	pthread_mutex_unlock(&a->lock);
	if (p && zero) /* outside the lock: the block is ours alone */
		hz_chunk_zero_runs(c, &plan, p);
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
	if (ok)
		a->allocated = a->allocated - old + (np << HZ_PAGE_SHIFT);
	pthread_mutex_unlock(&a->lock);
	return ok ? 0 : -1;
}

/* fork: every lock is taken before, released after in parent and child,
 * so a child forked while other threads allocate finds no lock held by a
 * thread it does not have. The state (blocks, chunks, dirty memory) is
 * inherited as it is; the child's counters start from zero, its report
 * being its own. */
static void fork_prepare(void)
{
	for (int i = 0; i < HZ_ARENAS; i++)
		pthread_mutex_lock(&hz_arenas[i].lock);
	hz_huge_lock();
	hz_reg_lock();
}

static void fork_release(void)
{
	hz_reg_unlock();
	hz_huge_unlock();
	for (int i = HZ_ARENAS - 1; i >= 0; i--)
		pthread_mutex_unlock(&hz_arenas[i].lock);
}

static void fork_child(void)
{
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		a->known_zero = a->purged = 0;
		a->purges = a->purge_ranges = a->purge_syscalls = a->purge_fallbacks = 0;
		a->nalloc = a->ncalloc = a->calloc_bytes = a->nfree = 0;
		a->hugetlb_chunks = a->hugetlb_fallbacks = 0;
	}
	fork_release();
}

__attribute__((constructor)) static void arena_init(void)
{
	pthread_atfork(fork_prepare, fork_release, fork_child);
}
