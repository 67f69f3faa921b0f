/* glibc's malloc family. Sizes below hz_large_min go to the embedded
 * jemalloc (allocator/small.h), larger ones to the hugepage arenas
 * (allocator/large.h), whose calloc clears only dirty pages. Whose pointer
 * a block is, is answered by the arenas' address table in O(1) without a
 * lock. Behaviour at the edges is glibc 2.36's. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../allocator/large.h"
#include "../allocator/small.h"
#include "../obs/ab.h"
#include "../obs/callsites.h"
#include "../obs/counters.h"
#include "glibc.h"
#include "options.h"
#include "fast.h"
#include "preload.h"

void hz_bad_pointer(const char *what)
{
	hz_os_log(what, NULL, NULL);
	abort();
}

void *hz_moved(void *q, void *p, size_t have, size_t size)
{
	if (!q)
		return NULL;
	memcpy(q, p, have < size ? have : size);
	free(p);
	return q;
}

/* The slow path of malloc and calloc (fast.h): blocks from hz_large_min
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
	if (zero && hz_unlikely(hz_callsites_on))
		hz_callsite(size);
	void *p = zero && hz_unlikely(hz_ab_on) && size >= hz_ab_min ? hz_ab_calloc(size, hz_large_alloc)
								       : hz_large_alloc(size, zero);
	return p ? p : large_failed(size, zero, 0);
}

/* n * size into *total: 0, or -1 with errno ENOMEM when it overflows. */
static int array_size(size_t n, size_t size, size_t *total)
{
	if (!__builtin_mul_overflow(n, size, total))
		return 0;
	errno = ENOMEM;
	return -1;
}

HZ_EXPORT void *malloc(size_t size)
{
	return hz_fast_malloc(size);
}

HZ_EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;
	if (array_size(n, size, &total))
		return NULL;
	/* jemalloc's calloc below its first large class, where its memory
	 * is cleared in place or known fresh (small.h). */
	if (hz_likely(total < HZ_JE_LARGE_MIN && total < hz_large_min))
		return hz_je_calloc(1, total);
	return hz_alloc_slow(total, 1);
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
	return (uintptr_t)p - HZ_REG_WINDOW_LO < HZ_REG_WINDOW && !hz_os_mapped(p);
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
	int saved = errno;
	if (hz_large_free(p))
		hz_bad_pointer("free(): invalid pointer");
	errno = saved;
}

HZ_EXPORT void free(void *p)
{
	hz_fast_free(p);
}

HZ_EXPORT void free_sized(void *p, size_t size)
{
	(void)size;
	free(p);
}

HZ_EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
	(void)align;
	(void)size;
	free(p);
}

HZ_EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (hz_likely(!hz_reg_maybe(p)))
		return hz_je_malloc_usable_size(p);
	if (hz_unlikely(hz_mode_off))
		return hz_off_malloc_usable_size(p);
	return hz_large_owns(p) ? hz_large_usable(p) : hz_je_malloc_usable_size(p);
}

static HZ_NOINLINE void *realloc_slow(void *p, size_t size)
{
	if (!p)
		return malloc(size);
	if (size == 0) { /* glibc: frees, returns NULL */
		free(p);
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
	return hz_moved(hz_fast_malloc(size), p, old ? old : hz_je_sallocx(p, 0), size);
}

/* Between two sizes below hz_large_min, a block of jemalloc's is
 * jemalloc's realloc (which sets errno to ENOMEM when it fails). */
HZ_EXPORT void *realloc(void *p, size_t size)
{
	if (hz_likely(size && size < hz_large_min && !hz_reg_maybe(p)))
		return hz_je_realloc(p, size);
	return realloc_slow(p, size);
}

HZ_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	return array_size(n, size, &total) ? NULL : realloc(p, total);
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

HZ_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int saved = errno; /* posix_memalign reports in its result only */
	void *p = hz_alloc_aligned(align, size);
	errno = saved;
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* glibc 2.36's aligned_alloc is memalign (2.38 made bad alignments EINVAL). */
HZ_EXPORT void *aligned_alloc(size_t align, size_t size) __attribute__((alias("memalign"), copy(memalign)));

HZ_EXPORT void *memalign(size_t align, size_t size)
{
	/* glibc takes any alignment, rounded up to a power of two. */
	if (align > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	size_t a = sizeof(void *);
	while (a < align)
		a <<= 1;
	return hz_alloc_aligned(a, size);
}

HZ_EXPORT void *valloc(size_t size)
{
	return hz_alloc_aligned(hz_page_size, size);
}

HZ_EXPORT void *pvalloc(size_t size)
{
	size_t ps = hz_page_size;
	if (size > SIZE_MAX - ps) {
		errno = ENOMEM;
		return NULL;
	}
	return hz_alloc_aligned(ps, size ? hz_round_up(size, ps) : ps);
}

/* Releases all it can: the arenas' free dirty pages, partial huge pages
 * included, and jemalloc's dirty pages in every arena. Returns 1 when the
 * arenas released memory. */
HZ_EXPORT int malloc_trim(size_t pad)
{
	if (hz_unlikely(hz_mode_off))
		return hz_off_malloc_trim(pad);
	hz_small_trim();
	return hz_large_trim() != 0;
}

/* jemalloc's figures (small blocks), and the arenas'. */
struct totals {
	size_t small_in_use, small_mapped, large_in_use, large_kept, large_system;
};

static void totals(struct totals *t)
{
	struct hz_small_totals s;
	struct hz_large_stats l;
	hz_small_totals(&s);
	hz_large_stats(&l);
	t->small_in_use = s.in_use;
	t->small_mapped = s.mapped;
	t->large_in_use = l.allocated_bytes;
	t->large_kept = l.dirty_free_bytes;
	t->large_system = l.chunks * HZ_CHUNK_SIZE + l.huge_cached_bytes;
}

/* arena, uordblks and fordblks are jemalloc's (small blocks); hblkhd is
 * what the hugepage arenas hand out, and what they keep free is counted in
 * fordblks too, as glibc counts its free memory. */
HZ_EXPORT struct mallinfo2 mallinfo2(void)
{
	if (hz_unlikely(hz_mode_off))
		return hz_off_mallinfo2();
	struct totals t;
	totals(&t);
	struct mallinfo2 m = {0};
	m.arena = t.small_mapped;
	m.uordblks = t.small_in_use;
	m.fordblks = (t.small_mapped > t.small_in_use ? t.small_mapped - t.small_in_use : 0) +
		     t.large_kept;
	m.hblkhd = t.large_in_use;
	return m;
}

static int clamp(size_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

HZ_EXPORT struct mallinfo mallinfo(void)
{
	if (hz_unlikely(hz_mode_off))
		return hz_off_mallinfo();
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo m = {0};
	m.arena = clamp(m2.arena);
	m.uordblks = clamp(m2.uordblks);
	m.fordblks = clamp(m2.fordblks);
	m.hblkhd = clamp(m2.hblkhd);
	return m;
}

/* Like glibc's, on stderr, without allocating. */
HZ_EXPORT void malloc_stats(void)
{
	if (hz_unlikely(hz_mode_off)) {
		hz_off_malloc_stats();
		return;
	}
	struct totals t;
	totals(&t);
	char buf[512];
	int n = snprintf(buf, sizeof buf,
			 "small blocks (jemalloc):\nsystem bytes     = %10zu\nin use bytes     = %10zu\n"
			 "large blocks (hugepage arenas):\nsystem bytes     = %10zu\n"
			 "in use bytes     = %10zu\nfree dirty bytes = %10zu\n"
			 "Total:\nsystem bytes     = %10zu\nin use bytes     = %10zu\n",
			 t.small_mapped, t.small_in_use, t.large_system, t.large_in_use, t.large_kept,
			 t.small_mapped + t.large_system, t.small_in_use + t.large_in_use);
	if (n > 0)
		hz_os_write_all(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* glibc's options are accepted and ignored (this allocator has its own,
 * HUGEZERO_*); glibc also returns 1 for options it does not know. Verbose
 * mode says which were ignored. */
HZ_EXPORT int mallopt(int param, int value)
{
	if (hz_unlikely(hz_mode_off))
		return hz_off_mallopt(param, value);
	(void)value;
	if (hz_option(HZ_OPT_VERBOSE)->num) {
		char num[16];
		snprintf(num, sizeof num, "%d", param);
		hz_os_log("mallopt: ignoring glibc option ", num, " (see HUGEZERO_* options)");
	}
	return 1;
}
