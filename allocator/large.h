/* allocator/large.h: the hugepage arenas' entry, the one the exported
 * ABI calls for large blocks: routes each call to the blocks in chunks
 * (run.h) or to the huge blocks (huge_cache.h), applies the limits
 * (limits.h: the largest block, a memory cgroup's pressure relieved) and
 * kicks the zeroer with what the call left it to do. Configured by
 * hz_large_setup; knows nothing of the exported ABI or of options. */
#ifndef HZ_LARGE_H
#define HZ_LARGE_H

#include <stddef.h>
#include <stdint.h>

#include "../obs/obs.h"
#include "fresh.h"
#include "huge.h"
#include "layout.h"
#include "registry.h"

#pragma GCC visibility push(hidden)

struct hz_large_cfg {
	size_t dirty_max;        /* free dirty bytes an arena keeps */
	uint64_t dirty_decay_ms; /* how long it keeps them */
	int thp;                 /* ask for transparent huge pages */
	enum hz_fresh_mode fresh; /* and for fresh memory, when (fresh.h) */
	int hugetlb;             /* chunks from the hugetlb pool when it can */
	int calloc_release;      /* calloc releases dirty runs instead of clearing them */
	int background;          /* the background zeroer may run (zeroer.h) */
	size_t reserve;          /* and keeps this many bytes of clean pages */
};
/* Configures the arenas; at the first allocation, before any block. The
 * limits (limits.h) are read here: in a memory cgroup the dirty budget
 * is at most an eighth of its limit and the reserve a thirty-second. */
void hz_large_setup(const struct hz_large_cfg *cfg);

/* The largest block anyone could serve here (hz_limits_max_block, at
 * most HZ_HUGE_MAX and a quarter of the window): a larger request fails
 * with ENOMEM, as glibc's mmap does. Set by hz_large_setup. */
extern size_t hz_block_max;

/* Set when the arenas gave their free memory back near a memory cgroup's
 * limit: whoever holds other free memory (the small engine) gives it
 * back too, and clears it. */
extern int hz_large_pressed;

/* A block of at least size bytes (0 < size <= hz_block_max), aligned
 * to align (a power of two from HZ_PAGE to HZ_HUGE_SIZE: chunks and huge
 * blocks are chunk-aligned, so a run is placed on the alignment); with
 * zero set its bytes read as zero, cleared only where pages were dirty (a
 * recycled huge block is cleared whole, hinted at its first page). NULL
 * with errno ENOMEM when size is out of range or memory is exhausted.
 * Near a memory cgroup's limit, the arenas give their free memory back
 * first. */
void *hz_large_alloc_aligned(size_t size, size_t align, int zero);
static inline void *hz_large_alloc(size_t size, int zero)
{
	return hz_large_alloc_aligned(size, HZ_PAGE, zero);
}

/* Whose a pointer is, found once (one registry lookup, no lock) and
 * handed to every call below: a chunk's, a huge block's, or neither
 * (someone else's memory). */
struct hz_owner {
	struct hz_chunk *chunk;
	struct hz_huge *huge;
};
static inline struct hz_owner hz_large_owner(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	struct hz_owner o = {0, 0};
	if (!(e & HZ_REG_HUGE)) /* none, or a chunk, which fills its slot */
		o.chunk = (struct hz_chunk *)e;
	else if (hz_huge_holds(p, e))
		o.huge = (struct hz_huge *)(e & ~HZ_REG_HUGE);
	return o;
}
/* Whether the pointer o was found for lies in memory of the arenas (a
 * chunk or a huge block). Memory outside is someone else's. */
static inline int hz_large_owns(struct hz_owner o)
{
	return o.chunk || o.huge;
}
/* The usable size of the live block at p (whose owner is o), or 0 when p
 * is not one. */
size_t hz_large_usable(struct hz_owner o, const void *p);
/* Frees the live block at p: 0, or -1 when p is not a live block (a
 * foreign pointer, or one freed already): the caller reports it. */
int hz_large_free(struct hz_owner o, void *p);
/* Resizes the live block at p, of old usable bytes (hz_large_usable), to
 * size bytes (0 < size <= hz_block_max): in place when its chunk has the
 * pages after it free (or it shrinks); otherwise a new block, chunk
 * blocks copied, huge blocks moved by the kernel (mremap) without copying
 * a byte. Returns the block, or NULL with errno ENOMEM (p untouched). */
void *hz_large_realloc(struct hz_owner o, void *p, size_t old, size_t size);
/* Resizes the live block at p to size bytes only where it stays in place
 * (jemalloc's xallocx); returns its usable size after, or 0 when p is not
 * a live block. */
size_t hz_large_resize(struct hz_owner o, void *p, size_t size);
/* The usable size hz_large_alloc(size) gives (whole pages), or 0 when size
 * is out of range. */
static inline size_t hz_large_good_size(size_t size)
{
	return size && size <= hz_block_max ? hz_round_up(size, HZ_PAGE) : 0;
}

/* Releases every free dirty page of every chunk, partial huge pages
 * included, and unmaps every cached huge block (malloc_trim); returns the
 * bytes released. */
size_t hz_large_trim(void);

/* The arenas' figures, for tests and reports. */
struct hz_large_stats {
	size_t chunks, allocated_bytes, calloc_bytes_known_zero, huge_cached_bytes;
	size_t dirty_free_bytes, purged_bytes;
	uint64_t allocs, callocs, calloc_bytes, frees;
	uint64_t purges, purge_ranges, purge_syscalls, purge_fallbacks; /* purges: batches */
	uint64_t hugetlb_chunks, hugetlb_fallbacks;
	uint64_t thp_advised, thp_refused;
	uint64_t cleared_caller, reserve_hits, reserve_misses;
	size_t reserve_bytes; /* free clean pages: pre-cleared or populated */
	uint64_t reserve_unused_bytes; /* the zeroer's work released before a block took it */
	uint64_t pressure_checks, pressure_releases, pressure_bytes; /* near the cgroup's limit */
	uint64_t refaulted_bytes, refaults; /* handed out again after a release; the faults that cost */
};
void hz_large_stats(struct hz_large_stats *out);
/* The same, by name, for the report (an obs.h source). */
void hz_large_counters(hz_counter_fn fn, void *arg);

#pragma GCC visibility pop

#endif
