/* Huge blocks (huge.h): descriptors, the arenas' caches of free ones,
 * new mappings, and moves by the kernel. */
#include <pthread.h>

#include "../obs/counters.h"
#include "background.h"
#include "fresh.h"
#include "huge.h"
#include "registry.h"

/* ---- descriptors: never unmapped, kept for reuse ---- */

int hz_huge_fitted;

static struct hz_huge *desc_free;
static pthread_mutex_t desc_lock = PTHREAD_MUTEX_INITIALIZER;

static struct hz_huge *desc_get(void)
{
	pthread_mutex_lock(&desc_lock);
	struct hz_huge *h = desc_free;
	if (!h) { /* a new page of them */
		void *m;
		struct hz_huge *page = hz_os_map(hz_page_size, hz_page_size, &m) ? NULL : m;
		size_t n = page ? hz_page_size / sizeof *page : 0;
		for (size_t i = 1; i < n; i++) {
			page[i].next = desc_free;
			desc_free = &page[i];
		}
		h = page;
	} else {
		desc_free = h->next;
	}
	pthread_mutex_unlock(&desc_lock);
	if (h)
		*h = (struct hz_huge){0};
	return h;
}

static void desc_put(struct hz_huge *h)
{
	pthread_mutex_lock(&desc_lock);
	h->next = desc_free;
	desc_free = h;
	pthread_mutex_unlock(&desc_lock);
}

void hz_huge_lock(void)
{
	pthread_mutex_lock(&desc_lock);
}

void hz_huge_unlock(void)
{
	pthread_mutex_unlock(&desc_lock);
}

/* ---- the registry's view ---- */

/* base and mapped are what the lock-free ownership test reads. */
static void set_mapping(struct hz_huge *h, unsigned char *base, size_t mapped)
{
	__atomic_store_n(&h->base, base, __ATOMIC_RELAXED);
	__atomic_store_n(&h->mapped, mapped, __ATOMIC_RELAXED);
}

/* Lock-free, so the descriptor may be changing or recycled meanwhile: it
 * stays mapped, its fields are read and written atomically, and a stale
 * answer can only concern a pointer that is not a live block. */
int hz_huge_holds(const void *p, uintptr_t e)
{
	const struct hz_huge *h = (const struct hz_huge *)(e & ~HZ_REG_HUGE);
	uintptr_t base = (uintptr_t)__atomic_load_n(&h->base, __ATOMIC_RELAXED);
	return (uintptr_t)p - base < __atomic_load_n(&h->mapped, __ATOMIC_RELAXED);
}

struct hz_huge *hz_huge_at(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	struct hz_huge *h = (struct hz_huge *)(e & ~HZ_REG_HUGE);
	return (e & HZ_REG_HUGE) && h->base == p ? h : NULL;
}

void hz_huge_destroy(struct hz_huge *h)
{
	hz_reg_set(h->base, h->mapped, 0);
	hz_os_unmap(h->base, h->mapped);
	desc_put(h);
}

/* Shortens the free block h to its first `mapped` bytes (whole huge
 * pages): the slots wholly past the new end are unregistered, the tail
 * unmapped. */
static void cut(struct hz_huge *h, size_t mapped)
{
	uintptr_t end = (uintptr_t)h->base + mapped, old_end = (uintptr_t)h->base + h->mapped;
	uintptr_t slot_end = hz_round_up(end, HZ_CHUNK_SIZE);
	set_mapping(h, h->base, mapped);
	if (old_end > slot_end)
		hz_reg_set((void *)slot_end, old_end - slot_end, 0);
	hz_os_unmap((void *)end, old_end - end);
}

/* ---- allocation ---- */

/* The cached block that fits `usable` bytes best, out of a's cache; one
 * more than a quarter larger than `mapped` is cut to it (a's lock held). */
static struct hz_huge *cache_take(struct hz_arena *a, size_t usable, size_t mapped)
{
	struct hz_huge **best = NULL;
	for (struct hz_huge **pp = &a->cache; *pp; pp = &(*pp)->next)
		if ((*pp)->mapped >= usable && (!best || (*pp)->mapped < (*best)->mapped))
			best = pp;
	if (!best)
		return NULL;
	struct hz_huge *h = *best;
	*best = h->next;
	a->cached -= h->mapped;
	hz_zeroer_collide(a, NULL, 0, 0, h); /* before the cut unmaps any of it */
	if (h->mapped > mapped && h->mapped - mapped > mapped / 4) {
		cut(h, mapped);
		if (h->cleared > mapped)
			h->cleared = mapped;
	}
	return h;
}

/* h handed out with usable bytes, counted (a's lock held); its first
 * known_zero bytes need no clear; fresh when it is a new mapping. */
static void hand_out(struct hz_arena *a, struct hz_huge *h, size_t usable, int zero, size_t known_zero,
		     int fresh)
{
	h->size = usable;
	h->live = 1;
	a->allocated += usable;
	hz_arena_count_alloc(a, usable, fresh ? usable : 0, zero);
	hz_zeroer_want |= fresh;
	if (zero) {
		known_zero = known_zero < usable ? known_zero : usable;
		a->known_zero += known_zero;
		a->cleared_caller += usable - known_zero;
	}
}

/* The first bytes of a cached block that read as zero. */
static size_t known_zero(const struct hz_huge *h)
{
	return h->dirty ? h->cleared : h->mapped;
}

/* A new mapping of `mapped` bytes for arena a, registered; NULL when
 * memory is out. Fresh, it reads as zero; it counts as dirty from here:
 * the program writes it. */
static struct hz_huge *map_new(struct hz_arena *a, size_t mapped, size_t usable)
{
	struct hz_huge *h = desc_get();
	void *base;
	if (!h)
		return NULL;
	/* Whole huge pages; under an address-space limit, what is needed. */
	if (hz_reg_map(mapped, 0, &base) && (usable == mapped || hz_reg_map(mapped = usable, 0, &base))) {
		desc_put(h);
		return NULL;
	}
	if (hz_thp)
		hz_fresh_advise(base, mapped);
	set_mapping(h, base, mapped);
	h->dirty = 1;
	h->owner = (unsigned)(a - hz_arenas);
	if (hz_reg_set(base, mapped, (uintptr_t)h | HZ_REG_HUGE)) {
		hz_huge_destroy(h);
		return NULL;
	}
	return h;
}

void *hz_huge_alloc(size_t size, int zero)
{
	size_t usable = hz_round_up(size, HZ_PAGE), mapped = hz_round_up(size, HZ_HUGE_SIZE);
	if (size <= HZ_LARGE_MAX || hz_huge_fitted) /* no chunk could be had: as little as will do */
		mapped = usable;
	struct hz_arena *a = hz_arena_of_thread();
	pthread_mutex_lock(&a->lock);
	struct hz_huge *h = cache_take(a, usable, mapped);
	size_t kz = 0;
	if (h) {
		kz = known_zero(h);
		hand_out(a, h, usable, zero, kz, 0);
	}
	pthread_mutex_unlock(&a->lock);
	if (h) {
		/* Recycled memory is cleared here, hinted at its first page,
		 * instead of being faulted in page by page by the kernel; what
		 * the zeroer cleared already is left alone. */
		if (zero && kz < usable) {
			if (!kz && !(hz_calloc_release && !hz_os_dontneed(h->base, usable)))
				hz_zero_hinted_counted(h->base, usable, h->base);
			else if (kz)
				hz_fill_counted(h->base + kz, 0, usable - kz);
		}
		h->dirty = 1;
		h->cleared = 0;
		h->shared = 0;
		return h->base;
	}
	if (!(h = map_new(a, mapped, usable)))
		return NULL;
	pthread_mutex_lock(&a->lock);
	hand_out(a, h, usable, zero, usable, 1);
	pthread_mutex_unlock(&a->lock);
	return h->base;
}

int hz_huge_free(struct hz_huge *h)
{
	struct hz_arena *a = &hz_arenas[h->owner];
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
	hz_arena_bound(a);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

size_t hz_huge_usable(struct hz_huge *h)
{
	struct hz_arena *a = &hz_arenas[h->owner];
	pthread_mutex_lock(&a->lock);
	size_t n = h->live ? h->size : 0;
	pthread_mutex_unlock(&a->lock);
	return n;
}

int hz_huge_resize(struct hz_huge *h, size_t size)
{
	struct hz_arena *a = &hz_arenas[h->owner];
	size_t usable = hz_round_up(size, HZ_PAGE);
	pthread_mutex_lock(&a->lock);
	int ok = h->live && usable <= h->mapped &&
		 hz_round_up(size, HZ_HUGE_SIZE) == hz_round_up(h->mapped, HZ_HUGE_SIZE);
	if (ok) {
		a->allocated = a->allocated - h->size + usable;
		h->size = usable;
	}
	pthread_mutex_unlock(&a->lock);
	return ok ? 0 : -1;
}

void *hz_huge_move(struct hz_huge *h, size_t size)
{
	/* The same arena lock for the whole move: the block stays live. */
	struct hz_arena *a = &hz_arenas[h->owner];
	size_t mapped = hz_round_up(size, HZ_HUGE_SIZE), usable = hz_round_up(size, HZ_PAGE);
	unsigned char *old = h->base;
	void *dst, *moved;
	pthread_mutex_lock(&a->lock);
	/* A new place aligned to the chunk size, registered; the old slots
	 * unregistered before the kernel moves the pages there, so no other
	 * mapping appears where the registry says "ours". */
	if (hz_reg_map(mapped, 0, &dst)) {
		pthread_mutex_unlock(&a->lock);
		return NULL;
	}
	if (hz_reg_set(dst, mapped, (uintptr_t)h | HZ_REG_HUGE)) {
		hz_os_unmap(dst, mapped);
		pthread_mutex_unlock(&a->lock);
		return NULL;
	}
	hz_reg_set(old, h->mapped, 0);
	if (hz_os_remap(old, h->mapped, mapped, dst, &moved)) {
		hz_reg_set(old, h->mapped, (uintptr_t)h | HZ_REG_HUGE);
		hz_reg_set(dst, mapped, 0);
		hz_os_unmap(dst, mapped);
		pthread_mutex_unlock(&a->lock);
		return NULL;
	}
	if (hz_thp)
		hz_thp_advise(moved, mapped);
	set_mapping(h, moved, mapped);
	a->allocated = a->allocated - h->size + usable;
	h->size = usable;
	pthread_mutex_unlock(&a->lock);
	return moved;
}
