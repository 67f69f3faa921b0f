/* allocator/huge.h: a huge block's descriptor and mapping. A block too
 * large for a chunk gets a mapping of its own, aligned to the chunk size
 * so that no other block shares its registry slots. Descriptors come from
 * a pool and are never unmapped: free's ownership test reads them without
 * a lock. Serving, caching and resizing them is huge_cache.h's. */
#ifndef HZ_HUGE_H
#define HZ_HUGE_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "registry.h"

#pragma GCC visibility push(hidden)

struct hz_huge {
	unsigned char *base;
	size_t size;   /* usable bytes, whole pages */
	size_t mapped; /* whole huge pages; whole pages where no more could be mapped */
	int live, dirty;
	int advice;           /* its mapping's (enum hz_fresh_advice) */
	size_t cleared;       /* while free and dirty: its first bytes the zeroer made zero */
	int shared;           /* while free: shared with a forked process, left to calloc */
	unsigned owner;       /* its arena */
	uint64_t freed;       /* its arena's clock when it was freed */
	struct hz_huge *next; /* in its arena's cache while free */
};

/* Every huge block mapped to its size in whole pages, and blocks of every
 * size served as huge blocks, none in chunks: where every mapping is
 * charged in full (overcommit mode 2). Set once at setup. */
extern int hz_huge_fitted;

/* Whether p lies in the huge block whose registry entry is e (its
 * mapping may end inside its last slot, where other memory can follow).
 * Lock-free: a stale answer can only concern a pointer that is not a
 * live block. */
static inline int hz_huge_holds(const void *p, uintptr_t e)
{
	const struct hz_huge *h = (const struct hz_huge *)(e & ~HZ_REG_HUGE);
	uintptr_t base = (uintptr_t)__atomic_load_n(&h->base, __ATOMIC_RELAXED);
	return (uintptr_t)p - base < __atomic_load_n(&h->mapped, __ATOMIC_RELAXED);
}
/* The huge block whose first byte is p, live or cached; NULL otherwise. */
static inline struct hz_huge *hz_huge_at(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	struct hz_huge *h = (struct hz_huge *)(e & ~HZ_REG_HUGE);
	return (e & HZ_REG_HUGE) && h->base == p ? h : NULL;
}

/* A new fresh mapping of `mapped` bytes (of `usable`, whole pages, where
 * that much cannot be mapped: an address-space limit) for arena owner,
 * registered, dirty (the program writes it); NULL when memory is out. */
struct hz_huge *hz_huge_map(size_t mapped, size_t usable, unsigned owner);
/* Shortens the free block h to its first `mapped` bytes (whole huge
 * pages): the slots wholly past the new end unregistered, the tail
 * unmapped, what the zeroer cleared kept within it. */
void hz_huge_cut(struct hz_huge *h, size_t mapped);
/* Moves h's pages to a new place of `mapped` bytes by the kernel
 * (mremap), registered there and no longer at the old place: 0, or -1
 * (h unchanged). Its arena's lock held: the block stays live. */
int hz_huge_remap(struct hz_huge *h, size_t mapped);
/* Unregisters and unmaps a free huge block, its descriptor back to the
 * pool (its arena's lock held, or one no other thread can reach yet). */
void hz_huge_destroy(struct hz_huge *h);

/* fork (fork_locks.h): the descriptor pool's lock. */
void hz_huge_lock(void);
void hz_huge_unlock(void);

#pragma GCC visibility pop

#endif
