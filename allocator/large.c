/* Large blocks in hugepage chunks: arenas, the chunk registry (large.h). */
#include <errno.h>
#include <pthread.h>

#include "large.h"

/* ---- registry: chunk index (address >> HZ_CHUNK_SHIFT) to chunk ---- */

#define REG_BITS (47 - HZ_CHUNK_SHIFT) /* user address space of x86-64, arm64 */
#define REG_LEAF_BITS 11
#define REG_ROOT (1u << (REG_BITS - REG_LEAF_BITS))
#define REG_LEAF (1u << REG_LEAF_BITS)

static struct hz_chunk **reg_root[REG_ROOT];
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

struct hz_chunk *hz_large_chunk(const void *p)
{
	uintptr_t i = (uintptr_t)p >> HZ_CHUNK_SHIFT;
	if (i >= ((uintptr_t)1 << REG_BITS))
		return NULL;
	struct hz_chunk **leaf = __atomic_load_n(&reg_root[i >> REG_LEAF_BITS], __ATOMIC_ACQUIRE);
	return leaf ? __atomic_load_n(&leaf[i & (REG_LEAF - 1)], __ATOMIC_ACQUIRE) : NULL;
}

static int reg_insert(struct hz_chunk *c)
{
	uintptr_t i = (uintptr_t)c->base >> HZ_CHUNK_SHIFT;
	if (i >= ((uintptr_t)1 << REG_BITS))
		return -1;
	pthread_mutex_lock(&reg_lock);
	struct hz_chunk **leaf = reg_root[i >> REG_LEAF_BITS];
	if (!leaf) {
		leaf = hz_os_map(REG_LEAF * sizeof *leaf, hz_page_size);
		if (!leaf) {
			pthread_mutex_unlock(&reg_lock);
			return -1;
		}
		__atomic_store_n(&reg_root[i >> REG_LEAF_BITS], leaf, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&leaf[i & (REG_LEAF - 1)], c, __ATOMIC_RELEASE);
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
};

static struct arena arenas[HZ_ARENAS] = {
	{PTHREAD_MUTEX_INITIALIZER, 0, {0}, 0, 0}, {PTHREAD_MUTEX_INITIALIZER, 0, {0}, 0, 0},
	{PTHREAD_MUTEX_INITIALIZER, 0, {0}, 0, 0}, {PTHREAD_MUTEX_INITIALIZER, 0, {0}, 0, 0},
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
	if (hz_chunk_init(c)) {
		hz_os_unmap(c, meta);
		return NULL;
	}
	c->owner = (unsigned)(a - arenas);
	if (reg_insert(c)) {
		hz_chunk_destroy(c);
		hz_os_unmap(c, meta);
		return NULL;
	}
	a->chunks[a->nchunks++] = c;
	return c;
}

void *hz_large_alloc(size_t size, int zero)
{
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
	if (p) {
		if (zero)
			a->known_zero += hz_chunk_calloc_clear(c, p);
		hz_chunk_mark_dirty(c, p); /* the program writes it from now on */
		a->allocated += npages << HZ_PAGE_SHIFT;
	}
	pthread_mutex_unlock(&a->lock);
	if (!p)
		errno = ENOMEM;
	return p;
}

size_t hz_large_usable(const void *p)
{
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
	struct hz_chunk *c = hz_large_chunk(p);
	if (!c)
		return -1;
	struct arena *a = arena_of_chunk(c);
	pthread_mutex_lock(&a->lock);
	size_t n = hz_chunk_free(c, p);
	if (n)
		a->allocated -= n << HZ_PAGE_SHIFT;
	pthread_mutex_unlock(&a->lock);
	return n ? 0 : -1;
}

size_t hz_large_trim(void)
{
	size_t bytes = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct arena *a = &arenas[i];
		pthread_mutex_lock(&a->lock);
		for (unsigned k = 0; k < a->nchunks; k++)
			bytes += hz_chunk_purge(a->chunks[k], 1, NULL);
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
		pthread_mutex_unlock(&a->lock);
	}
}
