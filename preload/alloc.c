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

/* jemalloc's block: its calloc cleared in place where it would fault
 * recycled pages in again (small.c), its mallocx for the other flags.
 * NULL with errno ENOMEM. */
static void *small_alloc(size_t size, int flags)
{
	void *p;
	if ((flags & HZ_JE_ZERO) && hz_small.jemalloc && hz_small_clears(size)) {
		hz_count(HZ_OP_CALLOC, size);
		p = hz_small_calloc(size, flags & ~HZ_JE_ZERO);
	} else if (flags == 0) {
		p = hz_small.malloc(size);
	} else if (flags == HZ_JE_ZERO) {
		hz_count(HZ_OP_CALLOC, size);
		p = hz_small.calloc(1, size);
	} else {
		p = hz_small.mallocx(size ? size : 1, flags);
	}
	if (!p)
		errno = ENOMEM;
	return p;
}

/* The arenas could not serve a size someone could (an address-space
 * limit, the kernel out of memory): jemalloc's own mappings, sized to
 * the block, are the last resort. Impossible sizes fail as they are. */
static HZ_NOINLINE void *large_failed(size_t size, int flags)
{
	if (size > hz_block_max) {
		errno = ENOMEM;
		return NULL;
	}
	return small_alloc(size, flags);
}

/* The one entry for large blocks: counted by operation and size class,
 * its call site sampled, a zeroed block taken into the arms (arm A: the
 * block cleared whole by glibc's memset, as glibc clears what it
 * recycles), jemalloc the fallback. */
static HZ_NOINLINE void *large_entry(size_t size, int flags)
{
	int zero = (flags & HZ_JE_ZERO) != 0;
	hz_count(zero ? HZ_OP_CALLOC : HZ_OP_MALLOC, size);
	hz_stats_child_check();
	if (hz_unlikely(hz_callsites_on))
		hz_callsite(size);
	int arm = zero ? hz_ab_arm(HZ_AB_CALLOC, size) : HZ_AB_NONE;
	uint64_t t0 = arm ? hz_os_now_ns() : 0;
	size_t align = HZ_JE_ALIGN_OF(flags);
	void *p = hz_large_alloc_aligned(size, align > HZ_PAGE ? align : HZ_PAGE, arm == HZ_AB_A ? 0 : zero);
	if (hz_unlikely(arm) && p) {
		if (arm == HZ_AB_A)
			hz_ab_baseline(p, 0, size);
		hz_ab_record(HZ_AB_CALLOC, arm, size, hz_os_now_ns() - t0);
	}
	if (hz_unlikely(__atomic_load_n(&hz_large_pressed, __ATOMIC_RELAXED))) {
		/* Near a memory cgroup's limit: jemalloc's free pages go back too. */
		__atomic_store_n(&hz_large_pressed, 0, __ATOMIC_RELAXED);
		hz_small_trim();
	}
	return p ? p : large_failed(size, flags);
}

/* The mode is tested here once for every allocating form: off mode's
 * hz_large_threshold is 0, so every call comes this way. */
void *hz_alloc_slow(size_t size, int flags)
{
	if (hz_unlikely(!hz_allocator_started))
		hz_allocator_start();
	if (hz_unlikely(hz_mode_off))
		return hz_off_mallocx(size, flags);
	return hz_alloc_large(size, flags) ? large_entry(size, flags) : small_alloc(size, flags);
}

/* Whether p, not the arenas', is nobody's: in the arenas' window, where
 * only their mappings are placed, and not mapped at all (a block freed
 * twice after malloc_trim unmapped it). jemalloc's are mapped. */
static int nobodys(const void *p)
{
	return hz_reg_in_first_window(p, 1) && !hz_os_mapped(p);
}

/* free preserves errno (POSIX 2024, glibc 2.33). jemalloc's free touches
 * it only when a system call fails (a purge's madvise); the arenas' path
 * may release memory, so it saves errno. */
void hz_free_slow(void *p)
{
	if (hz_unlikely(hz_mode_off)) {
		hz_glibc_free(p);
		return;
	}
	struct hz_owner o = hz_large_owner(p);
	if (!hz_large_owns(o)) { /* jemalloc's, in a widened window */
		if (nobodys(p))
			hz_bad_pointer("free(): invalid pointer");
		hz_small.free(p);
		return;
	}
	hz_count_free();
	hz_stats_child_check();
	int saved = errno;
	if (hz_large_free(o, p))
		hz_bad_pointer("free(): invalid pointer");
	errno = saved;
}

size_t hz_usable_slow(void *p)
{
	if (hz_unlikely(hz_mode_off))
		return hz_off_malloc_usable_size(p);
	struct hz_owner o = hz_large_owner(p);
	return hz_large_owns(o) ? hz_large_usable(o, p) : hz_small.usable(p);
}

/* A block moved between owners, or zeroed past its old size: a new block
 * (flags as hz_alloc_slow's), min(have, size) bytes copied, p freed. */
static void *moved(void *p, size_t have, size_t size, int flags)
{
	void *q = hz_alloc_slow(size, flags);
	if (!q)
		return NULL;
	memcpy(q, p, have < size ? have : size);
	hz_fast_free(p);
	return q;
}

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
	int mine = hz_large_owns(o), to_large = hz_alloc_large(size, flags);
	if (!mine && nobodys(p))
		hz_bad_pointer("realloc(): invalid pointer");
	size_t old = mine ? hz_large_usable(o, p) : 0;
	if (mine && !old)
		hz_bad_pointer("realloc(): invalid pointer");
	if (mine || to_large)
		hz_count(HZ_OP_REALLOC, size);
	if (mine && to_large && !(flags & HZ_JE_ZERO))
		return hz_large_realloc(o, p, old, size);
	if (!mine && !to_large) {
		void *q = flags ? hz_small.rallocx(p, size, flags) : hz_small.realloc(p, size);
		if (!q)
			errno = ENOMEM;
		return q;
	}
	/* Between jemalloc and the arenas, or zeroed: a new block. */
	return moved(p, old ? old : hz_small.usable(p), size, flags);
}
