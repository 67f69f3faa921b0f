/* The allocator's slow paths (alloc.c), beside the fast paths they
 * complete: blocks from hz_large_threshold up, every block until the allocator
 * has started or while it forwards to glibc, frees of pointers in the
 * arenas' window, realloc across owners. Every exported form comes here
 * with jemalloc's mallocx flags, so each large block takes one path.
 * Behaviour at the edges is glibc 2.36's. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../allocator/allocator.h"
#include "../obs/obs.h"
#include "preload.h"

void *(*hz_ab_baseline)(void *p, int c, size_t n);

void hz_bad_pointer(const char *what)
{
	hz_os_log(what, NULL, NULL);
	abort();
}

/* The small engine's block: jemalloc's calloc cleared in place where it
 * would fault recycled pages in again (small.c), mallocx for the other
 * flags. NULL with errno ENOMEM. Counted by the caller where it counts. */
static void *small_alloc(size_t size, int flags)
{
	void *p;
	if ((flags & HZ_JE_ZERO) && hz_small.jemalloc && !hz_hardened && hz_small_clears(size))
		p = hz_small_calloc(size, flags & ~HZ_JE_ZERO);
	else if (flags == 0)
		p = hz_small.malloc(size);
	else if (flags == HZ_JE_ZERO)
		p = hz_small.calloc(1, size);
	else
		p = hz_small.mallocx(size ? size : 1, flags);
	if (!p)
		errno = ENOMEM;
	return p;
}

/* The one entry for large blocks, every size from hz_large_threshold:
 * counted by operation and size class, its call site sampled; the
 * arenas' where they can serve it (hz_alloc_large), a zeroed one taken
 * into the arms (arm A: the block cleared whole, to its usable size, by
 * glibc's memset, as glibc clears what it recycles); the small engine
 * the fallback: for an alignment above a huge page or a jemalloc arena
 * named, and where the arenas could not map (an address-space limit,
 * the kernel out of memory). Impossible sizes fail as they are. */
static HZ_NOINLINE void *large_entry(size_t size, int flags)
{
	int zero = (flags & HZ_JE_ZERO) != 0;
	if (hz_unlikely(__atomic_load_n(&hz_tstats_low, __ATOMIC_RELAXED)))
		hz_counters_reserve();
	hz_count(zero ? HZ_OP_CALLOC : HZ_OP_MALLOC, size);
	hz_stats_child_check();
	if (hz_unlikely(hz_callsites_on))
		hz_callsite(size);
	void *p = NULL;
	if (hz_alloc_large(size, flags)) {
		int arm = zero ? hz_ab_arm(HZ_AB_CALLOC, size) : HZ_AB_NONE;
		uint64_t t0 = arm ? hz_os_now_ns() : 0;
		size_t align = HZ_JE_ALIGN_OF(flags);
		p = hz_large_alloc_aligned(size, align > HZ_PAGE ? align : HZ_PAGE,
					   arm == HZ_AB_A ? HZ_LARGE_NOT_KEPT : zero ? HZ_LARGE_ZERO : 0);
		if (hz_unlikely(arm) && p) {
			/* Its whole usable size, as arm B's: jemalloc's contract
			 * (and a later rallocx or xallocx with MALLOCX_ZERO)
			 * has every usable byte of a zeroed block zero. */
			if (arm == HZ_AB_A)
				hz_ab_baseline(p, 0, hz_large_usable(hz_large_owner(p), p));
			hz_ab_record(HZ_AB_CALLOC, arm, size, hz_os_now_ns() - t0);
		}
		if (hz_unlikely(__atomic_load_n(&hz_large_pressed, __ATOMIC_RELAXED))) {
			/* Near a memory cgroup's limit: the small engine's free pages go back too. */
			__atomic_store_n(&hz_large_pressed, 0, __ATOMIC_RELAXED);
			hz_small_trim();
		}
	}
	if (p)
		return p;
	if (size > hz_block_max) {
		errno = ENOMEM;
		return NULL;
	}
	return small_alloc(size, flags);
}

/* The mode is tested here once for every allocating form: off mode's
 * hz_large_threshold is 0, so every call comes this way. */
void *hz_alloc_slow(size_t size, int flags)
{
	if (hz_unlikely(!hz_allocator_started))
		hz_allocator_start();
	if (hz_unlikely(hz_mode_off))
		return hz_off_mallocx(size, flags);
	if (hz_route_large(size))
		return large_entry(size, flags);
	if (flags & HZ_JE_ZERO) /* calloc's from HZ_JE_LARGE_MIN (malloc.c) */
		hz_count(HZ_OP_CALLOC, size);
	return small_alloc(size, flags);
}

/* Whether p, not the arenas', is nobody's: in the arenas' window, where
 * only their mappings are placed, and not mapped at all (a block freed
 * twice after malloc_trim unmapped it). jemalloc's are mapped. */
static int nobodys(const void *p)
{
	return hz_reg_in_first_window(p, 1) && !hz_os_mapped(p);
}

/* An arena block whose owner o was found, freed: counted, errno kept
 * (POSIX 2024, glibc 2.33: free preserves it; the arenas' path may
 * release memory), a pointer that is not a live block reported. */
static void large_free(struct hz_owner o, void *p)
{
	hz_count_free();
	hz_stats_child_check();
	int saved = errno;
	if (hz_large_free(o, p))
		hz_bad_pointer("free(): invalid pointer");
	errno = saved;
}

void hz_free_slow(void *p)
{
	if (hz_unlikely(hz_mode_off)) {
		hz_glibc_free(p);
		return;
	}
	struct hz_owner o = hz_large_owner(p);
	if (!hz_large_owns(o)) { /* the small engine's, in a widened window */
		if (nobodys(p))
			hz_bad_pointer("free(): invalid pointer");
		hz_small.free(p);
		return;
	}
	large_free(o, p);
}

size_t hz_usable_slow(void *p)
{
	if (hz_unlikely(hz_mode_off))
		return hz_off_malloc_usable_size(p);
	struct hz_owner o = hz_large_owner(p);
	return hz_large_owns(o) ? hz_large_usable(o, p) : hz_small.usable(p);
}

/* A block moved between owners, zeroed past its old size or aligned
 * anew: a new block (flags as hz_alloc_slow's), min(have, size) bytes
 * copied, p freed by its owner o (found once). */
static void *moved(struct hz_owner o, void *p, size_t have, size_t size, int flags)
{
	void *q = hz_alloc_slow(size, flags);
	if (!q)
		return NULL;
	memcpy(q, p, have < size ? have : size);
	if (hz_large_owns(o))
		large_free(o, p);
	else
		hz_small.free(p);
	return q;
}

/* realloc's, and rallocx's with its flags. An arena block resized stays
 * in the arenas (in place, or moved by the kernel) where no alignment
 * above a page is asked; it is counted and its call site sampled as the
 * one entry's blocks are, and where the arenas cannot grow it, the entry
 * serves it (and falls back) with the bytes copied. */
void *hz_realloc_slow(void *p, size_t size, int flags)
{
	if (!p)
		return hz_alloc_slow(size, flags);
	if (size == 0 && !flags) { /* glibc: frees, returns NULL */
		hz_fast_free(p);
		return NULL;
	}
	if (hz_unlikely(hz_mode_off))
		return flags ? hz_off_rallocx(p, size, flags) : hz_glibc_realloc(p, size);
	struct hz_owner o = hz_large_owner(p);
	int mine = hz_large_owns(o), to_large = hz_route_large(size);
	if (!mine && nobodys(p))
		hz_bad_pointer("realloc(): invalid pointer");
	size_t old = mine ? hz_large_usable(o, p) : 0;
	if (mine && !old)
		hz_bad_pointer("realloc(): invalid pointer");
	if (!mine && !to_large) {
		void *q = flags ? hz_small.rallocx(p, size, flags) : hz_small.realloc(p, size);
		if (!q)
			errno = ENOMEM;
		return q;
	}
	hz_count(HZ_OP_REALLOC, size);
	if (mine && hz_alloc_large(size, flags) && !(flags & HZ_JE_ZERO) && HZ_JE_ALIGN_OF(flags) <= HZ_PAGE) {
		hz_stats_child_check();
		if (hz_unlikely(hz_callsites_on))
			hz_callsite(size);
		int saved = errno;
		void *q = hz_large_realloc(o, p, old, size);
		if (q)
			return q;
		errno = saved; /* the entry may still serve it (its fallback) */
	}
	/* Between the small engine and the arenas, zeroed, aligned anew, or
	 * not grown by the arenas: a new block from the entry. */
	return moved(o, p, old ? old : hz_small.usable(p), size, flags);
}
