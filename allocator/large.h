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
#define HZ_ARENAS 4

/* A block of at least size bytes (0 < size <= HZ_HUGE_MAX), page-aligned;
 * with zero set its bytes read as zero, cleared only where pages were
 * dirty (a recycled huge block is cleared whole, hinted at its first
 * page). NULL with errno ENOMEM when size is out of range or memory is
 * exhausted. */
void *hz_large_alloc(size_t size, int zero);
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

/* Releases every free dirty page of every chunk, partial huge pages
 * included (malloc_trim); returns the bytes released. */
size_t hz_large_trim(void);

/* Counters, for tests and reports. */
struct hz_large_stats {
	size_t chunks, allocated_bytes, calloc_bytes_known_zero, huge_cached_bytes;
	size_t dirty_free_bytes, purged_bytes, purges;
};
void hz_large_stats(struct hz_large_stats *out);

#endif
