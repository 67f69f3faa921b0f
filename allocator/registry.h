/* The arenas' address table: for every 64 MiB slot of the address space
 * (address >> HZ_CHUNK_SHIFT), what of the arenas' is there: a chunk, or
 * (low bit set) a huge block's descriptor. Chunks are aligned to their
 * size and fill their slot; a huge block is aligned to the slot size, so
 * no other block shares its slots, but its mapping may end inside its
 * last slot. Two levels, the leaves mapped on demand and never unmapped;
 * readers take no lock. */
#ifndef HZ_REGISTRY_H
#define HZ_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"
#include "chunk.h"

#define HZ_REG_BITS (47 - HZ_CHUNK_SHIFT) /* user address space of x86-64, arm64 */
#define HZ_REG_LEAF_BITS 11
#define HZ_REG_ROOT (1u << (HZ_REG_BITS - HZ_REG_LEAF_BITS))
#define HZ_REG_LEAF (1u << HZ_REG_LEAF_BITS)
#define HZ_REG_HUGE ((uintptr_t)1) /* the entry is a huge block's descriptor */

HZ_HIDDEN extern uintptr_t *hz_reg_root[HZ_REG_ROOT];

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
HZ_HIDDEN int hz_reg_set(const void *base, size_t len, uintptr_t e);

/* Whether p lies in the huge block whose entry is e (huge.c; its mapping
 * may end inside its last slot, where other memory can follow). */
HZ_HIDDEN int hz_huge_holds(const void *p, uintptr_t e);

/* The window: the arenas place their chunks and huge blocks at addresses
 * they choose, in [HZ_REG_WINDOW_LO, HZ_REG_WINDOW_LO + hz_reg_span), so
 * that a pointer outside it (every one of jemalloc's) is known not to be
 * theirs with no load of the table: free's first test, one load.
 * Inside, the table decides. Where the kernel leaves no room there
 * (another mapping, or an address space that ends below it), memory is
 * mapped anywhere and the window widens to every address (the span, one
 * word, set to the largest value: every address but HZ_REG_WINDOW_LO - 1,
 * never a block's, then tests as inside); so does HUGEZERO_MODE=off,
 * whose frees all take the slow path. */
#define HZ_REG_WINDOW_LO ((uintptr_t)1 << 44) /* 16 TiB */
#define HZ_REG_WINDOW ((uintptr_t)1 << 44)
HZ_HIDDEN extern uintptr_t hz_reg_span;
static inline int hz_reg_maybe(const void *p)
{
	return (uintptr_t)p - HZ_REG_WINDOW_LO < __atomic_load_n(&hz_reg_span, __ATOMIC_RELAXED);
}

/* Maps size bytes for the arenas, aligned to HZ_CHUNK_SIZE, in the window
 * where there is room (hugetlb as hz_os_map_hugetlb): 0, or ENOMEM (also
 * at once where the window has worked and the kernel refuses size bytes
 * for lack of memory or address space: no over-mapped try elsewhere). */
HZ_HIDDEN int hz_reg_map(size_t size, int hugetlb, void **out);
/* Every address from now on may be the arenas': free asks the table. */
HZ_HIDDEN void hz_reg_widen(void);

/* Whether p lies in memory of the arenas (a chunk or a huge block): no
 * lock. Memory outside is someone else's. */
static inline int hz_large_owns(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	if (!(e & HZ_REG_HUGE)) /* none, or a chunk, which fills its slot */
		return e != 0;
	return hz_huge_holds(p, e);
}

/* The chunk holding p, or NULL when no chunk does (a huge block is not in
 * a chunk). */
static inline struct hz_chunk *hz_reg_chunk(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	return e & HZ_REG_HUGE ? NULL : (struct hz_chunk *)e;
}

/* fork: the table's lock, taken after every arena's (the lock order). */
HZ_HIDDEN void hz_reg_lock(void);
HZ_HIDDEN void hz_reg_unlock(void);

#endif
