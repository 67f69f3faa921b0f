/* Huge blocks' descriptors and mappings (huge.c). */
#include <pthread.h>

#include "../os/os.h"
#include "allocator.h"

int hz_huge_fitted;

/* ---- descriptors: never unmapped, kept for reuse ---- */

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

/* ---- mappings ---- */

/* base and mapped are what the lock-free ownership test reads. */
static void set_mapping(struct hz_huge *h, unsigned char *base, size_t mapped)
{
	__atomic_store_n(&h->base, base, __ATOMIC_RELAXED);
	__atomic_store_n(&h->mapped, mapped, __ATOMIC_RELAXED);
}

struct hz_huge *hz_huge_map(size_t mapped, size_t usable, unsigned owner)
{
	struct hz_huge *h = desc_get();
	void *base;
	int hugetlb = 0, advice;
	if (!h)
		return NULL;
	/* Whole huge pages; under an address-space limit, what is needed. */
	if (hz_fresh_map(mapped, &hugetlb, &advice, &base) &&
	    (usable == mapped || hz_fresh_map(mapped = usable, &hugetlb, &advice, &base))) {
		desc_put(h);
		return NULL;
	}
	set_mapping(h, base, mapped);
	h->advice = advice;
	h->dirty = 1;
	h->owner = owner;
	if (hz_reg_set(base, mapped, (uintptr_t)h | HZ_REG_HUGE)) {
		hz_huge_destroy(h);
		return NULL;
	}
	return h;
}

void hz_huge_destroy(struct hz_huge *h)
{
	hz_reg_set(h->base, h->mapped, 0);
	hz_os_unmap(h->base, h->mapped);
	desc_put(h);
}

void hz_huge_cut(struct hz_huge *h, size_t mapped)
{
	uintptr_t end = (uintptr_t)h->base + mapped, old_end = (uintptr_t)h->base + h->mapped;
	uintptr_t slot_end = hz_round_up(end, HZ_CHUNK_SIZE);
	set_mapping(h, h->base, mapped);
	if (old_end > slot_end)
		hz_reg_set((void *)slot_end, old_end - slot_end, 0);
	hz_os_unmap((void *)end, old_end - end);
	if (h->cleared > mapped)
		h->cleared = mapped;
}

int hz_huge_remap(struct hz_huge *h, size_t mapped)
{
	unsigned char *old = h->base;
	void *dst, *moved;
	/* A new place aligned to the chunk size, registered; the old slots
	 * unregistered before the kernel moves the pages there, so no other
	 * mapping appears where the registry says "ours". */
	if (hz_fresh_place(mapped, 0, &dst))
		return -1;
	if (hz_reg_set(dst, mapped, (uintptr_t)h | HZ_REG_HUGE)) {
		hz_os_unmap(dst, mapped);
		return -1;
	}
	hz_reg_set(old, h->mapped, 0);
	if (hz_os_remap(old, h->mapped, mapped, dst, &moved)) {
		hz_reg_set(old, h->mapped, (uintptr_t)h | HZ_REG_HUGE);
		hz_reg_set(dst, mapped, 0);
		hz_os_unmap(dst, mapped);
		return -1;
	}
	hz_fresh_advise_moved(moved, mapped);
	set_mapping(h, moved, mapped);
	return 0;
}
