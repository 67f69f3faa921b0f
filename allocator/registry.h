/* allocator/registry.h: the arenas' address table and their window.
 *
 * For every 64 MiB slot of the address space (address >> HZ_CHUNK_SHIFT)
 * the table holds an entry: 0, a chunk's descriptor (chunk.h), or (low
 * bit HZ_REG_HUGE set) a huge block's (huge.h). Two levels, leaves mapped
 * on demand and never unmapped; readers take no lock, writers one.
 *
 * The window: the arenas place their memory in [HZ_REG_WINDOW_LO,
 * HZ_REG_WINDOW_LO + hz_reg_span) where they can (fresh.h), so a pointer
 * outside it is known not to be theirs with one load and no lookup. Where
 * memory had to be mapped elsewhere the span widens to every address
 * (hz_reg_widen) and the table decides. docs/design.md, "The window". */
#ifndef HZ_REGISTRY_H
#define HZ_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#pragma GCC visibility push(hidden)

#define HZ_REG_BITS (47 - HZ_CHUNK_SHIFT) /* user address space of x86-64, arm64 */
#define HZ_REG_LEAF_BITS 11
#define HZ_REG_ROOT (1u << (HZ_REG_BITS - HZ_REG_LEAF_BITS))
#define HZ_REG_LEAF (1u << HZ_REG_LEAF_BITS)
#define HZ_REG_HUGE ((uintptr_t)1) /* the entry is a huge block's descriptor */

extern uintptr_t *hz_reg_root[HZ_REG_ROOT];

/* The entry of p's slot, or 0: two loads, no lock. */
static inline uintptr_t hz_reg_get(const void *p)
{
	uintptr_t i = (uintptr_t)p >> HZ_CHUNK_SHIFT;
	if (i >> HZ_REG_BITS)
		return 0;
	uintptr_t *leaf = __atomic_load_n(&hz_reg_root[i >> HZ_REG_LEAF_BITS], __ATOMIC_ACQUIRE);
	return leaf ? __atomic_load_n(&leaf[i & (HZ_REG_LEAF - 1)], __ATOMIC_ACQUIRE) : 0;
}

/* Points the slots of [base, base+len) at e (0 to unregister). 0, or
 * ENOMEM when a leaf cannot be mapped or the range is past the table. */
int hz_reg_set(const void *base, size_t len, uintptr_t e);

#define HZ_REG_WINDOW_LO ((uintptr_t)1 << 44) /* 16 TiB */
#define HZ_REG_WINDOW ((uintptr_t)1 << 44)
/* The window's span: HZ_REG_WINDOW, or UINTPTR_MAX once widened. */
extern uintptr_t hz_reg_span;
/* Whether p may be the arenas' (free's first test): one load. */
static inline int hz_reg_in_window(const void *p)
{
	return (uintptr_t)p - HZ_REG_WINDOW_LO < __atomic_load_n(&hz_reg_span, __ATOMIC_RELAXED);
}
/* Whether [p, p+size) lies in the window as first placed (not widened). */
static inline int hz_reg_in_first_window(const void *p, size_t size)
{
	uintptr_t off = (uintptr_t)p - HZ_REG_WINDOW_LO;
	return off < HZ_REG_WINDOW && size <= HZ_REG_WINDOW - off;
}
/* Every address from now on may be the arenas': free asks the table. */
void hz_reg_widen(void);

/* fork (fork_locks.h): the table's writers' lock. */
void hz_reg_lock(void);
void hz_reg_unlock(void);

#pragma GCC visibility pop

#endif
