/* allocator/large.h: large blocks in hugepage chunks, thread-safe.
 *
 * A block is a run of pages in a 64 MiB chunk (chunk.h). Chunks belong to
 * arenas, each with its own lock; a thread keeps to one arena, so threads
 * allocating at once are not serialised on one lock. Whose pointer a
 * block is, is answered in O(1) without a lock: chunks are aligned to
 * their size and registered in a two-level table indexed by address. */
#ifndef HZ_LARGE_H
#define HZ_LARGE_H

#include <stddef.h>
#include <stdint.h>

#include "chunk.h"

/* The largest block a chunk serves; larger ones get mappings of their own
 * (huge blocks), up to HZ_HUGE_MAX, kept after free for reuse within
 * hz_dirty_max. */
#define HZ_LARGE_MAX (HZ_CHUNK_SIZE / 2)
#define HZ_HUGE_MAX ((size_t)1 << 46)
/* Free dirty memory an arena keeps for reuse (chunk pages and cached huge
 * blocks alike), and how long; set once at initialisation. */
extern size_t hz_dirty_max;
extern uint64_t hz_dirty_decay_ns;
/* Whether chunks come from the hugetlb pool (MAP_HUGETLB) when it can give
 * them; otherwise, and for huge blocks, transparent huge pages. */
extern int hz_hugetlb;
#define HZ_ARENAS 4
/* Where the malloc family sends blocks to the arenas (preload/malloc.c):
 * HUGEZERO_LARGE_MIN (the default is measured, see README.md), SIZE_MAX
 * where pages are not 4 KiB; 0 until the mode is decided, and with
 * HUGEZERO_MODE=off (every call then takes the slow path, to glibc). */
#define HZ_LARGE_MIN_DEFAULT ((size_t)1 << 20)
extern size_t hz_large_min;

/* A block of at least size bytes (0 < size <= HZ_HUGE_MAX), page-aligned;
 * with zero set its bytes read as zero, cleared only where pages were
 * dirty (a recycled huge block is cleared whole, hinted at its first
 * page). NULL with errno ENOMEM when size is out of range or memory is
 * exhausted. */
void *hz_large_alloc(size_t size, int zero);
/* The address table: chunk index (address >> HZ_CHUNK_SHIFT) to a chunk,
 * or a huge block's descriptor, in two levels (large.c). */
#define HZ_REG_BITS (47 - HZ_CHUNK_SHIFT) /* user address space of x86-64, arm64 */
#define HZ_REG_LEAF_BITS 11
__attribute__((visibility("hidden"))) extern uintptr_t *hz_reg_root[];

/* Whether p lies in a huge block registered as entry e (its mapping may
 * end inside its last slot, where other memory can follow). */
__attribute__((visibility("hidden"))) int hz_large_in_huge(const void *p, uintptr_t e);

/* Whether p lies in memory of the arenas (a chunk or a huge block): two
 * loads, no lock, inline on free's path. Memory outside is someone
 * else's (jemalloc's). */
static inline int hz_large_owns(const void *p)
{
	uintptr_t i = (uintptr_t)p >> HZ_CHUNK_SHIFT;
	if (i >> HZ_REG_BITS)
		return 0;
	uintptr_t *leaf = __atomic_load_n(&hz_reg_root[i >> HZ_REG_LEAF_BITS], __ATOMIC_ACQUIRE);
	uintptr_t e = leaf ? __atomic_load_n(&leaf[i & ((1u << HZ_REG_LEAF_BITS) - 1)],
					     __ATOMIC_ACQUIRE) : 0;
	if (!(e & 1)) /* none, or a chunk, which fills its slot */
		return e != 0;
	return hz_large_in_huge(p, e);
}
/* The chunk holding p, or NULL when no chunk of this allocator does (a
 * huge block is not in a chunk). */
struct hz_chunk *hz_large_chunk(const void *p);
/* The usable size of the live block at p, or 0 when p is not one. */
size_t hz_large_usable(const void *p);
/* Frees the live block at p: 0, or -1 when p is not a live block (a
 * foreign pointer, or one freed already): the caller reports it. */
int hz_large_free(void *p);
/* Resizes the live block at p to size bytes (0 < size <= HZ_HUGE_MAX):
 * in place when its chunk has the pages after it free (or it shrinks);
 * otherwise a new block, chunk blocks copied, huge blocks moved by the
 * kernel (mremap) without copying a byte. Returns the block, or NULL with
 * errno ENOMEM (p untouched), or NULL with errno EINVAL when p is not a
 * live block. */
void *hz_large_realloc(void *p, size_t size);
/* Resizes the live block at p to size bytes only where it stays in place
 * (jemalloc's xallocx); returns its usable size after, or 0 when p is not
 * a live block. */
size_t hz_large_resize(void *p, size_t size);
/* The usable size hz_large_alloc(size) gives (whole pages), or 0 when size
 * is out of range. */
static inline size_t hz_large_good_size(size_t size)
{
	return size && size <= HZ_HUGE_MAX ? (size + HZ_PAGE - 1) & ~(size_t)(HZ_PAGE - 1) : 0;
}

/* Releases every free dirty page of every chunk, partial huge pages
 * included, and unmaps every cached huge block (malloc_trim); returns the
 * bytes released. */
size_t hz_large_trim(void);

/* Counters, for tests and reports. */
struct hz_large_stats {
	size_t chunks, allocated_bytes, calloc_bytes_known_zero, huge_cached_bytes;
	size_t dirty_free_bytes, purged_bytes;
	uint64_t allocs, callocs, calloc_bytes, frees;
	uint64_t purges, purge_ranges, purge_syscalls, purge_fallbacks; /* purges: batches */
	uint64_t hugetlb_chunks, hugetlb_fallbacks;
};
void hz_large_stats(struct hz_large_stats *out);

#endif
