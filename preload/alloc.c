/* The allocator's slow paths (alloc.h), beside the fast paths they
 * complete: blocks from hz_large_min up, every block until the allocator
 * has started or while it forwards to glibc, frees of pointers in the
 * arenas' window, realloc across owners. Behaviour at the edges is glibc
 * 2.36's. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../allocator/large.h"
#include "../allocator/registry.h"
#include "../allocator/small.h"
#include "../obs/ab.h"
#include "../obs/callsites.h"
#include "../obs/counters.h"
#include "../obs/report.h"
#include "alloc.h"
#include "glibc.h"
#include "start.h"

void hz_bad_pointer(const char *what)
{
	hz_os_log(what, NULL, NULL);
	abort();
}

void *hz_realloc_copy(void *q, void *p, size_t have, size_t size)
{
	if (!q)
		return NULL;
	memcpy(q, p, have < size ? have : size);
	hz_fast_free(p);
	return q;
}

/* The slow path of malloc and calloc (alloc.h): blocks from hz_large_min
 * up, calloc's from HZ_JE_LARGE_MIN, and every block until the allocator
 * has started or while it forwards to glibc (hz_large_min is 0 then).
 * Counted here; the blocks of jemalloc's fast paths are counted by
 * jemalloc (malloc.small.*). */
static HZ_NOINLINE void *alloc_on(size_t size, int zero);

/* The arenas could not serve a size someone could (an address-space
 * limit, the kernel out of memory): jemalloc's own mappings, sized to
 * the block, aligned to align (a power of two; 0 for malloc's), are the
 * last resort. Impossible sizes fail as they are. */
static HZ_NOINLINE void *large_failed(size_t size, int zero, size_t align)
{
	if (size > hz_large_max)
		return NULL;
	void *p = align ? hz_je_mallocx(size, HZ_JE_LG_ALIGN(__builtin_ctzl(align)))
		  : zero ? hz_je_calloc(1, size) : hz_je_malloc(size);
	if (!p)
		errno = ENOMEM;
	return p;
}

/* Off mode's way through: a test and a jump to glibc, no frame. */
void *hz_alloc_slow(size_t size, int zero)
{
	if (hz_mode_off)
		return zero ? hz_glibc_calloc(1, size) : hz_glibc_malloc(size);
	return alloc_on(size, zero);
}

static void *alloc_on(size_t size, int zero)
{
	if (hz_unlikely(!hz_allocator_started)) {
		hz_allocator_start();
		if (hz_mode_off)
			return zero ? hz_glibc_calloc(1, size) : hz_glibc_malloc(size);
	}
	if (!hz_route_large(size)) {
		if (!zero)
			return hz_je_malloc(size);
		hz_count(HZ_OP_CALLOC, size);
		return hz_small_clears(size) ? hz_small_calloc(size, 0) : hz_je_calloc(1, size);
	}
	hz_count(zero ? HZ_OP_CALLOC : HZ_OP_MALLOC, size);
	hz_report_child_check();
	if (zero && hz_unlikely(hz_callsites_on))
		hz_callsite(size);
	void *p = zero && hz_unlikely(hz_ab_on) && size >= hz_ab_min ? hz_ab_calloc(size, hz_large_alloc)
								       : hz_large_alloc(size, zero);
	if (hz_unlikely(__atomic_load_n(&hz_large_pressed, __ATOMIC_RELAXED))) {
		/* Near a memory cgroup's limit: jemalloc's free pages go back too. */
		__atomic_store_n(&hz_large_pressed, 0, __ATOMIC_RELAXED);
		hz_small_trim();
	}
	return p ? p : large_failed(size, zero, 0);
}

/* free preserves errno (POSIX 2024, glibc 2.33). jemalloc's free touches
 * it only when a system call fails (a purge's madvise); the arenas' path
 * may release memory, so it saves errno. */
static HZ_NOINLINE void free_on(void *p);

void hz_free_slow(void *p)
{
	if (hz_mode_off)
		hz_glibc_free(p);
	else
		free_on(p);
}

/* Whether p, not the arenas', is nobody's: in the arenas' window, where
 * only their mappings are placed, and not mapped at all (a block freed
 * twice after malloc_trim unmapped it). jemalloc's are mapped. */
static int nobodys(const void *p)
{
	return hz_reg_in_first_window(p, 1) && !hz_os_mapped(p);
}

static void free_on(void *p)
{
	if (!hz_large_owns(p)) { /* jemalloc's, in a widened window */
		if (nobodys(p))
			hz_bad_pointer("free(): invalid pointer");
		hz_je_free(p);
		return;
	}
	hz_count_free();
	hz_report_child_check();
	int saved = errno;
	if (hz_large_free(p))
		hz_bad_pointer("free(): invalid pointer");
	errno = saved;
}

void *hz_realloc_slow(void *p, size_t size)
{
	if (!p)
		return hz_fast_malloc(size);
	if (size == 0) { /* glibc: frees, returns NULL */
		hz_fast_free(p);
		return NULL;
	}
	if (hz_unlikely(hz_mode_off))
		return hz_glibc_realloc(p, size);
	int mine = hz_large_owns(p);
	if (!mine && nobodys(p))
		hz_bad_pointer("realloc(): invalid pointer");
	if (mine || hz_route_large(size))
		hz_count(HZ_OP_REALLOC, size);
	size_t old = mine ? hz_large_usable(p) : 0;
	if (mine && !old)
		hz_bad_pointer("realloc(): invalid pointer");
	if (old && hz_route_large(size))
		return hz_large_realloc(p, size);
	if (!mine && !hz_route_large(size)) {
		void *q = hz_je_realloc(p, size);
		if (!q)
			errno = ENOMEM;
		return q;
	}
	/* Between jemalloc and the arenas: a new block, the bytes copied. */
	return hz_realloc_copy(hz_fast_malloc(size), p, old ? old : hz_je_sallocx(p, 0), size);
}

/* align: a power of two. Up to a page, the arenas' blocks qualify; larger
 * alignments go to jemalloc, which honours any. */
void *hz_alloc_aligned(size_t align, size_t size)
{
	if (hz_unlikely(!hz_allocator_started))
		hz_allocator_start();
	if (hz_unlikely(hz_mode_off))
		return hz_glibc_memalign(align, size);
	if (align <= HZ_PAGE && hz_route_large(size)) {
		void *p = hz_large_alloc(size, 0);
		return p ? p : large_failed(size, 0, align);
	}
	if (size > hz_large_max) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = hz_je_mallocx(size ? size : 1, HZ_JE_LG_ALIGN(__builtin_ctzl(align)));
	if (!p)
		errno = ENOMEM;
	return p;
}
