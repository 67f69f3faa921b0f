/* glibc's malloc family. Sizes below hz_large_threshold go to the embedded
 * jemalloc (allocator/small.c), larger ones to the hugepage arenas
 * (allocator/large.c), whose calloc clears only dirty pages. Whose pointer
 * a block is, is answered by the arenas' address table in O(1) without a
 * lock. Behaviour at the edges is glibc 2.36's. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../allocator/allocator.h"
#include "../obs/obs.h"
#include "preload.h"

HZ_INIT_LINK; /* the constructor comes with malloc (init.c) */

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
	 * is cleared in place or known fresh (small.c). */
	if (hz_likely(total < HZ_JE_LARGE_MIN && total < hz_threshold()))
		return hz_small.calloc(1, total);
	return hz_alloc_slow(total, HZ_JE_ZERO);
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
	if (hz_likely(!hz_reg_in_window(p)))
		return hz_small.usable(p);
	return hz_usable_slow(p);
}

/* Between two sizes below hz_large_threshold, a block of jemalloc's is
 * jemalloc's realloc (which sets errno to ENOMEM when it fails). */
HZ_EXPORT void *realloc(void *p, size_t size)
{
	if (hz_likely(size && size < hz_threshold() && !hz_reg_in_window(p)))
		return hz_small.realloc(p, size);
	return hz_realloc_slow(p, size, 0);
}

HZ_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	return array_size(n, size, &total) ? NULL : realloc(p, total);
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

/* glibc's mallinfo is mallinfo2's figures, clamped: off mode's too. */
HZ_EXPORT struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo m = {clamp(m2.arena),    clamp(m2.ordblks),  clamp(m2.smblks),
			     clamp(m2.hblks),    clamp(m2.hblkhd),   clamp(m2.usmblks),
			     clamp(m2.fsmblks),  clamp(m2.uordblks), clamp(m2.fordblks),
			     clamp(m2.keepcost)};
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
			 "small blocks (%s):\nsystem bytes     = %10zu\nin use bytes     = %10zu\n"
			 "large blocks (hugepage arenas):\nsystem bytes     = %10zu\n"
			 "in use bytes     = %10zu\nfree dirty bytes = %10zu\n"
			 "Total:\nsystem bytes     = %10zu\nin use bytes     = %10zu\n",
			 hz_small.jemalloc ? "jemalloc" : "the next allocator's, not counted here",
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
