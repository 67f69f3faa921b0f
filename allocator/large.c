/* Large blocks in hugepage chunks: arenas, the chunk registry (large.h). */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "../include/hugezero.h"
#include "large.h"

/* A block too large for a chunk: a mapping of its own, aligned to the
 * chunk size so that no other block shares its registry slots, kept after
 * free for reuse within a byte budget. */
struct huge {
	unsigned char *base;
	size_t size;   /* usable bytes, whole pages */
	size_t mapped; /* whole huge pages */
	int live, dirty;
	unsigned owner;
	uint64_t freed;    /* its arena's free count when it was freed */
	struct huge *next; /* in its arena's cache while free */
};

/* ---- registry: chunk index (address >> HZ_CHUNK_SHIFT) to what is
 * there: a chunk, or (low bit set) a huge block's descriptor ---- */

#define REG_BITS HZ_REG_BITS
#define REG_LEAF_BITS HZ_REG_LEAF_BITS
#define REG_ROOT (1u << (REG_BITS - REG_LEAF_BITS))
#define REG_LEAF (1u << REG_LEAF_BITS)
#define REG_HUGE ((uintptr_t)1)

uintptr_t *hz_reg_root[REG_ROOT];
#define reg_root hz_reg_root
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t reg_get(const void *p)
{
	uintptr_t i = (uintptr_t)p >> HZ_CHUNK_SHIFT;
	if (i >= ((uintptr_t)1 << REG_BITS))
		return 0;
	uintptr_t *leaf = __atomic_load_n(&reg_root[i >> REG_LEAF_BITS], __ATOMIC_ACQUIRE);
	return leaf ? __atomic_load_n(&leaf[i & (REG_LEAF - 1)], __ATOMIC_ACQUIRE) : 0;
}

struct hz_chunk *hz_large_chunk(const void *p)
{
	uintptr_t e = reg_get(p);
	return e & REG_HUGE ? NULL : (struct hz_chunk *)e;
}

/* Lock-free, so the descriptor may be changing or recycled meanwhile: it
 * stays mapped (desc_put), its fields are read and written atomically, and
 * a stale answer can only concern a pointer that is not a live block. */
int hz_large_in_huge(const void *p, uintptr_t e)
{
	const struct huge *h = (const struct huge *)(e & ~REG_HUGE);
	uintptr_t base = (uintptr_t)__atomic_load_n(&h->base, __ATOMIC_RELAXED);
	return (uintptr_t)p - base < __atomic_load_n(&h->mapped, __ATOMIC_RELAXED);
}

/* The huge block whose first byte is p, live or cached; NULL otherwise. */
static struct huge *huge_at(const void *p)
{
	uintptr_t e = reg_get(p);
	struct huge *h = (struct huge *)(e & ~REG_HUGE);
	return (e & REG_HUGE) && h->base == p ? h : NULL;
}

/* Points the slots of [base, base+len) at e (0 to unregister). */
static int reg_set(const void *base, size_t len, uintptr_t e)
{
	uintptr_t first = (uintptr_t)base >> HZ_CHUNK_SHIFT;
	uintptr_t last = ((uintptr_t)base + len - 1) >> HZ_CHUNK_SHIFT;
	if (last >= ((uintptr_t)1 << REG_BITS))
		return -1;
	pthread_mutex_lock(&reg_lock);
	for (uintptr_t i = first; i <= last; i++) {
		uintptr_t *leaf = reg_root[i >> REG_LEAF_BITS];
		if (!leaf) {
			leaf = hz_os_map(REG_LEAF * sizeof *leaf, hz_page_size);
			if (!leaf) {
				pthread_mutex_unlock(&reg_lock);
				return -1;
			}
			__atomic_store_n(&reg_root[i >> REG_LEAF_BITS], leaf, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&leaf[i & (REG_LEAF - 1)], e, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

/* ---- arenas ---- */

#define ARENA_CHUNKS 256 /* 16 GiB of chunks an arena */

struct arena {
	pthread_mutex_t lock;
	unsigned nchunks;
	struct hz_chunk *chunks[ARENA_CHUNKS];
	size_t allocated, known_zero;
	struct huge *cache; /* free huge blocks, most recent first */
	size_t cached;      /* their mapped bytes */
	uint64_t dirty_since; /* when free dirty memory last appeared; 0: none */
	size_t purged, purges;
	uint64_t frees; /* a clock: blocks and chunks remember it when freed */
	/* Counters, under the lock. */
	uint64_t nalloc, ncalloc, calloc_bytes, nfree;
	uint64_t purge_ranges, purge_syscalls, purge_fallbacks;
	uint64_t hugetlb_chunks, hugetlb_fallbacks;
};

/* One batched release's figures, counted in arena a (its lock held). */
static size_t count_purge(struct arena *a, const struct hz_release_result *r, size_t bytes)
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

size_t hz_dirty_max = (size_t)256 << 20;
size_t hz_large_min; /* 0 until preload/malloc.c has decided the mode */
int hz_hugetlb;
uint64_t hz_dirty_decay_ns = (uint64_t)10000 * 1000000;

static void count_alloc(struct arena *a, size_t bytes, int zero)
{
	a->nalloc++;
	if (zero) {
		a->ncalloc++;
		a->calloc_bytes += bytes;
	}
}

static struct arena arenas[HZ_ARENAS] = {
	{.lock = PTHREAD_MUTEX_INITIALIZER}, {.lock = PTHREAD_MUTEX_INITIALIZER},
	{.lock = PTHREAD_MUTEX_INITIALIZER}, {.lock = PTHREAD_MUTEX_INITIALIZER},
};
static unsigned next_arena;
static __thread int my_arena __attribute__((tls_model("initial-exec"))) = -1;

static struct arena *arena_of_thread(void)
{
	if (hz_unlikely(my_arena < 0))
		my_arena = (int)(__atomic_fetch_add(&next_arena, 1, __ATOMIC_RELAXED) % HZ_ARENAS);
	return &arenas[my_arena];
}

/* The arena a chunk belongs to: kept in the chunk's owner field. */
static struct arena *arena_of_chunk(const struct hz_chunk *c)
{
	return &arenas[c->owner];
}

/* A new chunk for arena a (its lock held); NULL when memory is out. */
static struct hz_chunk *grow(struct arena *a)
{
	if (a->nchunks == ARENA_CHUNKS)
		return NULL;
	/* The chunk's own metadata (about 100 KiB) comes from the OS too. */
	size_t meta = (sizeof(struct hz_chunk) + hz_page_size - 1) & ~(hz_page_size - 1);
	struct hz_chunk *c = hz_os_map(meta, hz_page_size);
	if (!c)
		return NULL;
	if (hz_chunk_init(c, hz_hugetlb)) {
		hz_os_unmap(c, meta);
		return NULL;
	}
	if (hz_hugetlb) {
		a->hugetlb_chunks += c->hugetlb;
		a->hugetlb_fallbacks += !c->hugetlb;
	}
	c->owner = (unsigned)(a - arenas);
	if (reg_set(c->base, HZ_CHUNK_SIZE, (uintptr_t)c)) {
		hz_chunk_destroy(c);
		hz_os_unmap(c, meta);
		return NULL;
	}
	a->chunks[a->nchunks++] = c;
	return c;
}

/* ---- huge blocks ---- */

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

/* Unmaps a free huge block (its arena's lock held, or none: unreachable). */
/* Descriptors of huge blocks are never unmapped (free's ownership test
 * may read one without a lock): freed ones are kept for reuse, under
 * reg_lock. */
static struct huge *desc_free;

static struct huge *desc_get(void)
{
	pthread_mutex_lock(&reg_lock);
	struct huge *h = desc_free;
	if (!h) { /* a new page of them */
		struct huge *page = hz_os_map(hz_page_size, hz_page_size);
		size_t n = page ? hz_page_size / sizeof *page : 0;
		for (size_t i = 1; i < n; i++) {
			page[i].next = desc_free;
			desc_free = &page[i];
		}
		h = page;
	} else {
		desc_free = h->next;
	}
	pthread_mutex_unlock(&reg_lock);
	if (h)
		memset(h, 0, sizeof *h);
	return h;
}

static void desc_put(struct huge *h)
{
	pthread_mutex_lock(&reg_lock);
	h->next = desc_free;
	desc_free = h;
	pthread_mutex_unlock(&reg_lock);
}

static void huge_set(struct huge *h, unsigned char *base, size_t mapped)
{
	__atomic_store_n(&h->base, base, __ATOMIC_RELAXED);
	__atomic_store_n(&h->mapped, mapped, __ATOMIC_RELAXED);
}

static void huge_destroy(struct huge *h)
{
	reg_set(h->base, h->mapped, 0);
	hz_os_unmap(h->base, h->mapped);
	desc_put(h);
}

/* Shortens the free huge block h to its first `mapped` bytes (whole huge
 * pages): the slots wholly past the new end are unregistered, the tail
 * unmapped. */
static void huge_cut(struct huge *h, size_t mapped)
{
	uintptr_t end = (uintptr_t)h->base + mapped, old_end = (uintptr_t)h->base + h->mapped;
	uintptr_t slot_end = (end + HZ_CHUNK_SIZE - 1) & ~(uintptr_t)(HZ_CHUNK_SIZE - 1);
	huge_set(h, h->base, mapped);
	if (old_end > slot_end)
		reg_set((void *)slot_end, old_end - slot_end, 0);
	hz_os_unmap((void *)end, old_end - end);
}

static void *huge_alloc(size_t size, int zero)
{
	size_t usable = round_up(size, HZ_PAGE), mapped = round_up(size, HZ_HUGE_SIZE);
	struct arena *a = arena_of_thread();
	struct huge *h = NULL;

	/* Reuse the cached block that fits best; one more than a quarter
	 * too large is cut to size, its tail unmapped. */
	pthread_mutex_lock(&a->lock);
	struct huge **best = NULL;
	for (struct huge **pp = &a->cache; *pp; pp = &(*pp)->next)
		if ((*pp)->mapped >= mapped && (!best || (*pp)->mapped < (*best)->mapped))
			best = pp;
	if (best) {
		h = *best;
		*best = h->next;
		a->cached -= h->mapped;
		if (h->mapped - mapped > mapped / 4)
			huge_cut(h, mapped);
	}
	if (h) {
		h->size = usable;
		h->live = 1;
		a->allocated += usable;
		count_alloc(a, usable, zero);
		if (zero && !h->dirty)
			a->known_zero += usable;
	}
	pthread_mutex_unlock(&a->lock);

	if (h) {
		/* Recycled memory is cleared here, hinted at its first page,
		 * instead of being faulted in page by page by the kernel. */
		if (zero && h->dirty && !(hz_calloc_release && !hz_os_dontneed(h->base, usable)))
			hz_clear_hinted(h->base, usable, h->base);
		h->dirty = 1;
		return h->base;
	}

	h = desc_get();
	if (!h)
		return NULL;
	unsigned char *base = hz_os_map(mapped, HZ_CHUNK_SIZE);
	if (!base) {
		desc_put(h);
		return NULL;
	}
	if (hz_thp)
		hz_thp_advise(base, mapped);
	huge_set(h, base, mapped);
	h->size = usable;
	h->live = 1;
	h->dirty = 1; /* fresh: zero now, written by the program from here */
	h->owner = (unsigned)(a - arenas);
	if (reg_set(h->base, mapped, (uintptr_t)h | REG_HUGE)) {
		huge_destroy(h);
		return NULL;
	}
	pthread_mutex_lock(&a->lock);
	a->allocated += usable;
	count_alloc(a, usable, zero);
	if (zero)
		a->known_zero += usable;
	pthread_mutex_unlock(&a->lock);
	return h->base;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static size_t arena_dirty(const struct arena *a)
{
	size_t pages = 0;
	for (unsigned k = 0; k < a->nchunks; k++)
		pages += a->chunks[k]->dirty_free;
	return (pages << HZ_PAGE_SHIFT) + a->cached;
}

/* Releases arena a's free dirty memory (its lock held), least recently
 * freed first, whether a cached huge block (unmapped) or a chunk's whole
 * free 2 MiB blocks (one batch): all of it, or while over budget. A
 * buffer freed and reused all the time stays; memory left alone goes. */
static void release_oldest(struct arena *a, int all)
{
	unsigned char tried[ARENA_CHUNKS] = {0};
	while (all || arena_dirty(a) > hz_dirty_max) {
		struct huge **hp = NULL;
		for (struct huge **pp = &a->cache; *pp; pp = &(*pp)->next)
			hp = pp; /* the tail: least recently freed */
		struct hz_chunk *c = NULL;
		unsigned ck = 0;
		for (unsigned k = 0; k < a->nchunks; k++)
			if (!tried[k] && a->chunks[k]->dirty_free >= HZ_HUGE_PAGES &&
			    (!c || a->chunks[k]->freed < c->freed))
				c = a->chunks[k], ck = k;
		if (c && (!hp || c->freed <= (*hp)->freed)) {
			struct hz_release_result r;
			size_t bytes = hz_chunk_purge(c, 0, &r);
			count_purge(a, &r, bytes);
			tried[ck] = 1; /* what is left there is in partial huge pages */
		} else if (hp) {
			struct huge *old = *hp;
			*hp = NULL;
			a->cached -= old->mapped;
			a->purged += old->mapped;
			huge_destroy(old);
		} else {
			break;
		}
	}
}

/* Bounds the free dirty memory of arena a (its lock held): over
 * hz_dirty_max, the least recently freed goes first (release_oldest);
 * kept longer than hz_dirty_decay_ns, all of it goes. Partial huge pages
 * stay (malloc_trim takes them). */
static void arena_bound(struct arena *a)
{
	size_t dirty = arena_dirty(a);
	if (!dirty) {
		a->dirty_since = 0;
		return;
	}
	uint64_t now = now_ns();
	if (!a->dirty_since)
		a->dirty_since = now;
	int expired = now - a->dirty_since >= hz_dirty_decay_ns;
	if (dirty <= hz_dirty_max && !expired)
		return;
	release_oldest(a, expired);
	a->dirty_since = arena_dirty(a) ? now : 0;
}

static int huge_free(struct huge *h)
{
	struct arena *a = &arenas[h->owner];
	pthread_mutex_lock(&a->lock);
	if (!h->live) {
		pthread_mutex_unlock(&a->lock);
		return -1;
	}
	h->live = 0;
	a->nfree++;
	h->freed = ++a->frees;
	a->allocated -= h->size;
	h->next = a->cache;
	a->cache = h;
	a->cached += h->mapped;
	arena_bound(a);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

void *hz_large_alloc(size_t size, int zero)
{
	if (size > HZ_LARGE_MAX && size <= HZ_HUGE_MAX) {
		void *p = huge_alloc(size, zero);
		if (!p)
			errno = ENOMEM;
		return p;
	}
	if (size == 0 || size > HZ_LARGE_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	size_t npages = (size + HZ_PAGE - 1) >> HZ_PAGE_SHIFT;
	struct arena *a = arena_of_thread();
	pthread_mutex_lock(&a->lock);
	void *p = NULL;
	struct hz_chunk *c = NULL;
	for (unsigned i = 0; i < a->nchunks && !p; i++)
		if (a->chunks[i]->free_pages >= npages && (p = hz_chunk_alloc(a->chunks[i], npages)))
			c = a->chunks[i];
	if (!p && (c = grow(a)))
		p = hz_chunk_alloc(c, npages);
	struct hz_zero_plan plan;
	if (p) {
		if (zero) {
			hz_chunk_zero_plan(c, p, &plan);
			a->known_zero += plan.known_zero;
		}
		hz_chunk_mark_dirty(c, p); /* the program writes it from now on */
		a->allocated += npages << HZ_PAGE_SHIFT;
		count_alloc(a, npages << HZ_PAGE_SHIFT, zero);
	}
	pthread_mutex_unlock(&a->lock);
	if (p && zero) /* outside the lock: the block is ours alone */
		hz_chunk_zero_runs(c, &plan, p);
	if (!p)
		errno = ENOMEM;
	return p;
}

size_t hz_large_usable(const void *p)
{
	struct huge *h = huge_at(p);
	if (h) {
		struct arena *a = &arenas[h->owner];
		pthread_mutex_lock(&a->lock);
		size_t n = h->live ? h->size : 0;
		pthread_mutex_unlock(&a->lock);
		return n;
	}
	struct hz_chunk *c = hz_large_chunk(p);
	if (!c)
		return 0;
	struct arena *a = arena_of_chunk(c);
	pthread_mutex_lock(&a->lock);
	size_t n = hz_chunk_block_pages(c, p);
	pthread_mutex_unlock(&a->lock);
	return n << HZ_PAGE_SHIFT;
}

int hz_large_free(void *p)
{
	struct huge *h = huge_at(p);
	if (h)
		return huge_free(h);
	struct hz_chunk *c = hz_large_chunk(p);
	if (!c)
		return -1;
	struct arena *a = arena_of_chunk(c);
	pthread_mutex_lock(&a->lock);
	size_t n = hz_chunk_free(c, p);
	if (n) {
		a->nfree++;
		c->freed = ++a->frees;
		a->allocated -= n << HZ_PAGE_SHIFT;
		arena_bound(a);
	}
	pthread_mutex_unlock(&a->lock);
	return n ? 0 : -1;
}

/* In place, under the block's arena lock: a chunk block resized within
 * its chunk, or a huge block within its mapping. 0 when done. */
static int resize_in_place(void *p, size_t old, size_t size)
{
	struct hz_chunk *c = hz_large_chunk(p);
	if (c && size <= HZ_LARGE_MAX) {
		struct arena *a = arena_of_chunk(c);
		size_t np = (size + HZ_PAGE - 1) >> HZ_PAGE_SHIFT;
		pthread_mutex_lock(&a->lock);
		int ok = hz_chunk_resize(c, p, np) == 0;
		if (ok)
			a->allocated = a->allocated - old + (np << HZ_PAGE_SHIFT);
		pthread_mutex_unlock(&a->lock);
		return ok ? 0 : -1;
	}
	struct huge *h = huge_at(p);
	if (h && size > HZ_LARGE_MAX) {
		struct arena *a = &arenas[h->owner];
		size_t usable = round_up(size, HZ_PAGE);
		pthread_mutex_lock(&a->lock);
		int ok = round_up(size, HZ_HUGE_SIZE) == h->mapped;
		if (ok) {
			a->allocated = a->allocated - h->size + usable;
			h->size = usable;
		}
		pthread_mutex_unlock(&a->lock);
		return ok ? 0 : -1;
	}
	return -1;
}

size_t hz_large_resize(void *p, size_t size)
{
	size_t old = hz_large_usable(p);
	if (old && size && size <= HZ_HUGE_MAX && size != old)
		resize_in_place(p, old, size);
	return hz_large_usable(p);
}

void *hz_large_realloc(void *p, size_t size)
{
	size_t old = hz_large_usable(p);
	if (!old) {
		errno = EINVAL;
		return NULL;
	}
	if (size == 0 || size > HZ_HUGE_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	if (!resize_in_place(p, old, size))
		return p;
	struct huge *h = huge_at(p);
	if (h && size > HZ_LARGE_MAX) {
		/* Same arena lock for the whole move: the block stays live. */
		struct arena *a = &arenas[h->owner];
		size_t mapped = round_up(size, HZ_HUGE_SIZE), usable = round_up(size, HZ_PAGE);
		pthread_mutex_lock(&a->lock);
		/* A new place aligned to the chunk size, registered; the old
		 * slots unregistered before the kernel moves the pages there,
		 * so no other mapping appears where the registry says "ours". */
		unsigned char *dst = hz_os_map(mapped, HZ_CHUNK_SIZE), *old = h->base;
		if (dst && reg_set(dst, mapped, (uintptr_t)h | REG_HUGE)) {
			hz_os_unmap(dst, mapped);
			dst = NULL;
		}
		if (!dst) {
			pthread_mutex_unlock(&a->lock);
			goto copy;
		}
		reg_set(old, h->mapped, 0);
		unsigned char *moved = hz_os_remap(old, h->mapped, mapped, dst);
		if (!moved) {
			reg_set(old, h->mapped, (uintptr_t)h | REG_HUGE);
			reg_set(dst, mapped, 0);
			hz_os_unmap(dst, mapped);
			pthread_mutex_unlock(&a->lock);
			goto copy;
		}
		if (hz_thp)
			hz_thp_advise(moved, mapped);
		huge_set(h, moved, mapped);
		a->allocated = a->allocated - h->size + usable;
		h->size = usable;
		pthread_mutex_unlock(&a->lock);
		return moved;
	}
copy:;
	void *q = hz_large_alloc(size, 0);
	if (!q)
		return NULL;
	memcpy(q, p, old < size ? old : size);
	hz_large_free(p);
	return q;
}

/* fork: every lock is taken before, released after in parent and child,
 * so a child forked while other threads allocate finds no lock held by a
 * thread it does not have. */
/* Lock order everywhere: an arena, then the registry. */
static void fork_prepare(void)
{
	for (int i = 0; i < HZ_ARENAS; i++)
		pthread_mutex_lock(&arenas[i].lock);
	pthread_mutex_lock(&reg_lock);
}

static void fork_release(void)
{
	pthread_mutex_unlock(&reg_lock);
	for (int i = HZ_ARENAS - 1; i >= 0; i--)
		pthread_mutex_unlock(&arenas[i].lock);
}

/* The child's counters start from zero: its report is its own. The
 * state (blocks, chunks, dirty memory) is inherited as it is. */
static void fork_child(void)
{
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct arena *a = &arenas[i];
		a->known_zero = a->purged = a->purges = 0;
		a->nalloc = a->ncalloc = a->calloc_bytes = a->nfree = 0;
		a->purge_ranges = a->purge_syscalls = a->purge_fallbacks = 0;
		a->hugetlb_chunks = a->hugetlb_fallbacks = 0;
	}
	fork_release();
}

__attribute__((constructor)) static void large_init(void)
{
	pthread_atfork(fork_prepare, fork_release, fork_child);
}

size_t hz_large_trim(void)
{
	size_t bytes = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct arena *a = &arenas[i];
		pthread_mutex_lock(&a->lock);
		for (unsigned k = 0; k < a->nchunks; k++) {
			struct hz_release_result r;
			size_t b = hz_chunk_purge(a->chunks[k], 1, &r);
			bytes += count_purge(a, &r, b);
		}
		while (a->cache) { /* every cached block */
			struct huge *h = a->cache;
			a->cache = h->next;
			a->cached -= h->mapped;
			a->purged += h->mapped;
			bytes += h->mapped;
			huge_destroy(h);
		}
		pthread_mutex_unlock(&a->lock);
	}
	return bytes;
}

void hz_large_stats(struct hz_large_stats *out)
{
	*out = (struct hz_large_stats){0};
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct arena *a = &arenas[i];
		pthread_mutex_lock(&a->lock);
		out->chunks += a->nchunks;
		out->allocated_bytes += a->allocated;
		out->calloc_bytes_known_zero += a->known_zero;
		out->huge_cached_bytes += a->cached;
		out->dirty_free_bytes += arena_dirty(a);
		out->purged_bytes += a->purged;
		out->purges += a->purges;
		out->allocs += a->nalloc;
		out->callocs += a->ncalloc;
		out->calloc_bytes += a->calloc_bytes;
		out->frees += a->nfree;
		out->purge_ranges += a->purge_ranges;
		out->purge_syscalls += a->purge_syscalls;
		out->purge_fallbacks += a->purge_fallbacks;
		out->hugetlb_chunks += a->hugetlb_chunks;
		out->hugetlb_fallbacks += a->hugetlb_fallbacks;
		pthread_mutex_unlock(&a->lock);
	}
}
