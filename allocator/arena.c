/* Arenas (arena.c): the calling thread's arena, its chunks, its sums and
 * counters. */
#include "allocator.h"

#define ARENA_INIT {.lock = PTHREAD_MUTEX_INITIALIZER, .claim_done = PTHREAD_COND_INITIALIZER}
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

/* A new chunk for arena a, registered; NULL when memory is out. */
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
		a->n.hugetlb_chunks += c->hugetlb;
		a->n.hugetlb_fallbacks += !c->hugetlb;
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

/* a's free chunk pages in memory: clean ones, and with dirty set the
 * dirty ones too (lock held). */
static size_t free_pages(const struct hz_arena *a, int dirty)
{
	size_t pages = 0;
	for (unsigned k = 0; k < a->nchunks; k++)
		pages += a->chunks[k]->clean_free + (dirty ? a->chunks[k]->dirty_free : 0);
	return pages;
}

size_t hz_arena_clean_bytes(const struct hz_arena *a)
{
	return free_pages(a, 0) << HZ_PAGE_SHIFT;
}

size_t hz_arena_free_bytes(const struct hz_arena *a)
{
	return (free_pages(a, 1) << HZ_PAGE_SHIFT) + a->kept_bytes + a->cached;
}

/* The sum over every arena, each under its lock, of its free bytes in
 * memory, or with clean set its clean chunk pages only. */
static size_t sum(int clean)
{
	size_t bytes = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		bytes += clean ? hz_arena_clean_bytes(a) : hz_arena_free_bytes(a);
		pthread_mutex_unlock(&a->lock);
	}
	return bytes;
}

size_t hz_arenas_free_bytes(void)
{
	return sum(0);
}

size_t hz_arenas_clean_bytes(void)
{
	return sum(1);
}

void hz_arena_publish(struct hz_arena *a, size_t held)
{
	__atomic_store_n(&a->held, held, __ATOMIC_RELAXED);
}

size_t hz_arenas_held(void)
{
	size_t bytes = 0;
	for (int i = 0; i < HZ_ARENAS; i++)
		bytes += __atomic_load_n(&hz_arenas[i].held, __ATOMIC_RELAXED);
	return bytes;
}

/* The arena holds held bytes free in memory, fewer than before: the
 * low-water mark, published. */
static void lowered(struct hz_arena *a, size_t held)
{
	if (held < a->low)
		a->low = held;
	hz_arena_publish(a, held);
}

void hz_arena_note_low(struct hz_arena *a)
{
	lowered(a, hz_arena_free_bytes(a));
}

void hz_arena_count_take(struct hz_arena *a, size_t bytes)
{
	uint8_t *t = &a->takes[hz_take_class(bytes)];
	if (*t < 2)
		++*t;
}

/* A block handed out, counted. */
static void count_alloc(struct hz_arena *a, size_t bytes, size_t fresh, int zero)
{
	a->n.nalloc++;
	hz_arena_count_take(a, bytes);
	if (fresh)
		a->n.reserve_misses++;
	else
		a->n.reserve_hits++;
	if (zero) {
		a->n.ncalloc++;
		a->n.calloc_bytes += bytes;
	}
}

void hz_arena_count_alloc(struct hz_arena *a, size_t bytes, size_t fresh, int zero)
{
	hz_arena_note_low(a);
	count_alloc(a, bytes, fresh, zero);
}

size_t hz_arena_count_purge(struct hz_arena *a, const struct hz_purge_result *r, size_t bytes)
{
	if (r->batch.ranges) {
		a->n.purges++;
		a->n.purge_ranges += r->batch.ranges;
		a->n.purge_syscalls += r->batch.syscalls;
		a->n.purge_fallbacks += r->batch.fallbacks;
	}
	a->n.unused += r->clean_bytes;
	a->populated.wasted += r->populated_bytes;
	a->cleared.wasted += r->clean_bytes - r->populated_bytes;
	a->n.purged += bytes;
	return bytes;
}

void hz_arena_collide(struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		      const struct hz_huge *h)
{
	if (hz_likely(!hz_claim_collide(a, c, lo, hi, h)))
		return;
	/* Claims made meanwhile are of free pages and cached blocks: never
	 * of this memory again. */
	while (hz_claim_overlaps(a, c, lo, hi, h))
		pthread_cond_wait(&a->claim_done, &a->lock);
}

void hz_arena_quiesce(struct hz_arena *a)
{
	while (hz_claim_busy(a))
		pthread_cond_wait(&a->claim_done, &a->lock);
}

/* ---- kept blocks ----
 * A program that frees a block and mallocs one of the same length (a
 * buffer per request; sweep's and retake's 1 MiB) takes the block it
 * freed back whole: no fit, no page state counted and changed twice.
 * Kept blocks stay used in their chunks, dirty (a malloc's program wrote
 * them); they count as the arena's free memory in memory, which its
 * budget and decay see, and whose release (budget.c: release_oldest,
 * trim) frees them into their chunks first. A calloc never takes one:
 * its zero knowledge is the chunk's. */

/* Removes the kept block k from the list. */
static void unlist(struct hz_arena *a, unsigned k)
{
	a->kept_bytes -= a->kept[k].npages << HZ_PAGE_SHIFT;
	for (unsigned j = k + 1; j < a->nkept; j++)
		a->kept[j - 1] = a->kept[j];
	__atomic_store_n(&a->nkept, a->nkept - 1, __ATOMIC_RELAXED);
}

/* The oldest kept block freed into its chunk. */
static void drop_oldest(struct hz_arena *a)
{
	hz_chunk_free(a->kept[0].c, a->kept[0].p);
	unlist(a, 0);
}

void hz_arena_drop_kept(struct hz_arena *a)
{
	while (a->nkept)
		drop_oldest(a);
}

int hz_arena_is_kept(const struct hz_arena *a, const void *p)
{
	for (unsigned k = 0; k < a->nkept; k++)
		if (a->kept[k].p == p)
			return 1;
	return 0;
}

int hz_arena_keep(struct hz_arena *a, struct hz_chunk *c, void *p, size_t npages)
{
	size_t bytes = npages << HZ_PAGE_SHIFT;
	int dropped = 0;
	for (; a->nkept && (a->nkept == HZ_RUN_KEEP || a->kept_bytes + bytes > HZ_RUN_KEEP_BYTES); dropped++)
		drop_oldest(a);
	a->kept[a->nkept] = (struct hz_run_kept){c, p, npages};
	a->kept_bytes += bytes;
	__atomic_store_n(&a->nkept, a->nkept + 1, __ATOMIC_RELAXED);
	return dropped;
}

void *hz_arena_take_kept(struct hz_arena *a, size_t npages, size_t align)
{
	for (unsigned k = a->nkept; k-- > 0;) {
		unsigned char *p = a->kept[k].p;
		if (a->kept[k].npages == npages && !((uintptr_t)p & (align - 1))) {
			/* Handed out as alloc_in's blocks are (run.c), its free
			 * memory known without a count over the chunks: what was
			 * published, less the block. */
			size_t bytes = npages << HZ_PAGE_SHIFT;
			unlist(a, k);
			lowered(a, a->held > bytes ? a->held - bytes : 0);
			count_alloc(a, bytes, 0, 0);
			a->n.kept_taken++;
			a->allocated += bytes;
			a->last_npages = npages;
			return p;
		}
	}
	return NULL;
}
