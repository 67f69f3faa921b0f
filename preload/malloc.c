/* The interposed malloc family. Sizes below hz_large_min go to jemalloc
 * (allocator/small.h); larger ones to hugepage arenas (allocator/large.h),
 * whose calloc clears only dirty pages. Whose pointer a block is, is
 * answered by the arenas' address table in O(1) without a lock.
 * Behaviour at the edges is glibc 2.36's. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "../allocator/large.h"
#include "../allocator/small.h"
#include "../arch/arch.h"
#include "../include/hugezero.h"
#include "ab.h"
#include "callsites.h"
#include "glibc.h"
#include "options.h"
#include "stats.h"

/* Blocks from hz_large_min up live in the arenas, smaller ones in
 * jemalloc: one compare on malloc's path. */
static int large_ok(size_t size)
{
	return size >= hz_large_min;
}

/* glibc's message and abort for a pointer free cannot take. */
static void __attribute__((noreturn)) bad_pointer(const char *what)
{
	static const char pre[] = "hugezero: ";
	if (write(2, pre, sizeof pre - 1) < 0 || write(2, what, strlen(what)) < 0 ||
	    write(2, "\n", 1) < 0)
		abort();
	abort();
}

/* From jemalloc's large size classes up (16 KiB with 4 KiB pages), its
 * calloc zeroes a recycled dirty block with MADV_DONTNEED, and every page
 * faults in again (unless its THP mode is "always"): 128 us for 256 KiB
 * against 2.2 us for glibc (bench/alloc_bench). Cleared here instead,
 * hinted at its first page. */
#define HZ_JE_CLEAR_MIN ((size_t)16 << 10)

static HZ_NOINLINE void *calloc_cleared(size_t size, int flags)
{
	void *p = flags ? hz_je_mallocx(size, flags) : hz_je_malloc(size);
	/* The whole block, as jemalloc's calloc leaves it: a later in-place
	 * rallocx or xallocx with MALLOCX_ZERO relies on that. */
	return p ? hz_clear_hinted(p, hz_je_sallocx(p, 0), p) : NULL;
}

/* ---- HUGEZERO_MODE=off: everything to glibc ----
 * Decided at the first call into the allocator, before it hands out a
 * block (hz_large_min stays 0 until then, so that call takes the slow
 * path), or by the constructor if it comes first: in either case no block
 * of this allocator can reach glibc's free. The environment is read with
 * getenv, which does not allocate, as jemalloc reads MALLOC_CONF. */
static int mode_decided;

void hz_mode_decide(void)
{
	if (__atomic_load_n(&mode_decided, __ATOMIC_ACQUIRE))
		return;
	const char *m = getauxval(AT_SECURE) ? NULL : getenv("HUGEZERO_MODE");
	int off = m && !strcmp(m, "off") && hz_glibc_malloc && hz_glibc_free;
	if (m && strcmp(m, "off") && strcmp(m, "on"))
		hz_log("ignoring HUGEZERO_MODE: not on or off: ", m, "");
	/* The __libc_* references bind to the first definition: another
	 * allocator preloaded after this library (tcmalloc, mimalloc) may
	 * define them. Off means glibc, or nothing. */
	Dl_info di;
	if (off && !(dladdr((void *)hz_glibc_malloc, &di) && di.dli_fname &&
		     strstr(di.dli_fname, "/libc.so."))) {
		hz_log("ignoring HUGEZERO_MODE=off: __libc_malloc is not glibc's (another allocator "
		       "is preloaded)", "", "");
		off = 0;
	}
	hz_mode_off = off;
	if (!off)
		__atomic_store_n(&hz_large_min, HZ_LARGE_MIN_DEFAULT, __ATOMIC_RELAXED);
	__atomic_store_n(&mode_decided, 1, __ATOMIC_RELEASE);
}

/* In off mode, glibc's own function of that name (looked up once). */
#define HZ_GLIBC(type, name) ((type)hz_glibc_next(&glibc_##name, #name))
static void *glibc_malloc_trim, *glibc_mallinfo2, *glibc_mallinfo, *glibc_malloc_stats, *glibc_mallopt;

/* Blocks from hz_large_min up, and every block until the mode is known. */
static HZ_NOINLINE void *alloc_large(size_t size, int zero)
{
	if (hz_unlikely(!mode_decided)) {
		hz_mode_decide();
		if (!hz_mode_off && !large_ok(size))
			return zero ? hz_je_calloc(1, size) : hz_je_malloc(size);
	}
	if (hz_mode_off)
		return zero ? hz_glibc_calloc(1, size) : hz_glibc_malloc(size);
	if (zero && hz_unlikely(hz_callsites_on))
		hz_callsite(size);
	if (zero && hz_unlikely(hz_ab_on) && size >= hz_ab_min)
		return hz_ab_calloc(size, hz_large_alloc);
	return hz_large_alloc(size, zero);
}

static void *alloc(size_t size, int zero)
{
	if (large_ok(size))
		return alloc_large(size, zero);
	/* jemalloc's malloc and calloc, not mallocx: they have its fast path,
	 * and set errno to ENOMEM on failure. */
	if (!zero)
		return hz_je_malloc(size);
	/* (Above 1 MiB only where the arenas are off: jemalloc's calloc knows
	 * fresh memory, which a clear here would commit.) */
	return size < HZ_JE_CLEAR_MIN || size >= HZ_LARGE_MIN_DEFAULT ? hz_je_calloc(1, size)
								      : calloc_cleared(size, 0);
}

HZ_EXPORT void *malloc(size_t size)
{
	hz_count(HZ_OP_MALLOC, size);
	return alloc(size, 0);
}

HZ_EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	hz_count(HZ_OP_CALLOC, total);
	return alloc(total, 1);
}

/* free preserves errno (POSIX 2024, glibc 2.33). jemalloc's free touches
 * it only when a system call fails (a purge's madvise); the arenas' path
 * may release memory, so it saves errno. */
static HZ_NOINLINE void free_slow(void *p)
{
	if (!hz_large_owns(p)) { /* HUGEZERO_MODE=off */
		hz_glibc_free(p);
		return;
	}
	int saved = errno;
	if (hz_large_free(p))
		bad_pointer("free(): invalid pointer");
	errno = saved;
}

HZ_EXPORT void free(void *p)
{
	hz_count_free();
	if (hz_unlikely(hz_mode_off | hz_large_owns(p)))
		free_slow(p);
	else
		hz_je_free(p);
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
	if (hz_unlikely(hz_large_owns(p)))
		return hz_large_usable(p);
	if (hz_unlikely(hz_mode_off)) {
		static void *next;
		size_t (*fn)(void *) = (size_t (*)(void *))hz_glibc_next(&next, "malloc_usable_size");
		return fn ? fn(p) : 0;
	}
	return hz_je_malloc_usable_size(p);
}

HZ_EXPORT void *realloc(void *p, size_t size)
{
	if (!p)
		return malloc(size);
	if (size == 0) { /* glibc: frees, returns NULL */
		free(p);
		return NULL;
	}
	hz_count(HZ_OP_REALLOC, size);
	int mine = hz_large_owns(p);
	if (hz_unlikely(hz_mode_off) && !mine)
		return hz_glibc_realloc(p, size);
	size_t old = mine ? hz_large_usable(p) : 0;
	if (mine && !old)
		bad_pointer("realloc(): invalid pointer");
	if (old && large_ok(size))
		return hz_large_realloc(p, size);
	if (!mine && !large_ok(size)) {
		void *q = hz_je_realloc(p, size);
		if (!q)
			errno = ENOMEM;
		return q;
	}
	/* Between jemalloc and the arenas: a new block, the bytes copied. */
	size_t have = old ? old : hz_je_sallocx(p, 0);
	void *q = alloc(size, 0);
	if (!q)
		return NULL;
	memcpy(q, p, have < size ? have : size);
	free(p);
	return q;
}

HZ_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

/* align: a power of two. Up to a page, the arenas' blocks qualify; larger
 * alignments go to jemalloc, which honours any. */
static void *alloc_aligned(size_t align, size_t size)
{
	hz_mode_decide();
	if (hz_unlikely(hz_mode_off))
		return hz_glibc_memalign(align, size);
	if (align <= HZ_PAGE && large_ok(size))
		return hz_large_alloc(size, 0);
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
	void *p = alloc_aligned(align, size);
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
	return alloc_aligned(a, size);
}

HZ_EXPORT void *valloc(size_t size)
{
	return alloc_aligned(hz_page_size, size);
}

HZ_EXPORT void *pvalloc(size_t size)
{
	size_t ps = hz_page_size;
	if (size > SIZE_MAX - ps) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_aligned(ps, size ? (size + ps - 1) & ~(ps - 1) : ps);
}

/* Releases all it can: the arenas' free dirty pages, partial huge pages
 * included, and jemalloc's dirty pages in every arena (4096 is jemalloc's
 * MALLCTL_ARENAS_ALL). Returns 1 when the arenas released memory. */
HZ_EXPORT int malloc_trim(size_t pad)
{
	if (hz_unlikely(hz_mode_off))
		return HZ_GLIBC(int (*)(size_t), malloc_trim)(pad);
	(void)pad;
	hz_je_mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
	return hz_large_trim() != 0;
}

/* jemalloc's figures (refreshed), and the arenas'. */
struct totals {
	size_t small_in_use, small_mapped, large_in_use, large_kept, large_system;
};

static void totals(struct totals *t)
{
	uint64_t epoch = 1;
	size_t sz = sizeof epoch;
	*t = (struct totals){0};
	hz_je_mallctl("epoch", &epoch, &sz, &epoch, sz);
	sz = sizeof(size_t);
	hz_je_mallctl("stats.allocated", &t->small_in_use, &sz, NULL, 0);
	sz = sizeof(size_t);
	hz_je_mallctl("stats.mapped", &t->small_mapped, &sz, NULL, 0);
	struct hz_large_stats s;
	hz_large_stats(&s);
	t->large_in_use = s.allocated_bytes;
	t->large_kept = s.dirty_free_bytes;
	t->large_system = s.chunks * HZ_CHUNK_SIZE + s.huge_cached_bytes;
}

/* arena, uordblks and fordblks are jemalloc's (small blocks); hblkhd is
 * what the hugepage arenas hand out, and what they keep free is counted in
 * fordblks too, as glibc counts its free memory. */
HZ_EXPORT struct mallinfo2 mallinfo2(void)
{
	if (hz_unlikely(hz_mode_off))
		return HZ_GLIBC(struct mallinfo2 (*)(void), mallinfo2)();
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
		return HZ_GLIBC(struct mallinfo (*)(void), mallinfo)();
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo m = {0};
	m.arena = clamp(m2.arena);
	m.uordblks = clamp(m2.uordblks);
	m.fordblks = clamp(m2.fordblks);
	m.hblkhd = clamp(m2.hblkhd);
	return m;
}

/* The embedded jemalloc's own counters, refreshed: calls its arenas
 * served (thread caches included). */
void hz_small_counters(hz_counter_fn fn, void *arg)
{
	static const char *const names[][2] = {
		{"malloc.small.calls", "stats.arenas.4096.small.nmalloc"},
		{"malloc.small.frees", "stats.arenas.4096.small.ndalloc"},
		{"malloc.small.large_calls", "stats.arenas.4096.large.nmalloc"},
		{"malloc.small.large_frees", "stats.arenas.4096.large.ndalloc"},
	};
	uint64_t epoch = 1;
	size_t sz = sizeof epoch;
	hz_je_mallctl("epoch", &epoch, &sz, &epoch, sz);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		uint64_t v = 0;
		sz = sizeof v;
		hz_je_mallctl(names[i][1], &v, &sz, NULL, 0);
		fn(arg, names[i][0], v);
	}
	struct totals t;
	totals(&t);
	fn(arg, "malloc.small.allocated_bytes", t.small_in_use);
	fn(arg, "malloc.small.mapped_bytes", t.small_mapped);
}

/* Like glibc's, on stderr, without allocating. */
HZ_EXPORT void malloc_stats(void)
{
	if (hz_unlikely(hz_mode_off)) {
		HZ_GLIBC(void (*)(void), malloc_stats)();
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
	if (n > 0 && write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0)
		return;
}

/* glibc's options are accepted and ignored (this allocator has its own,
 * HUGEZERO_*); glibc also returns 1 for options it does not know. Verbose
 * mode says which were ignored. */
HZ_EXPORT int mallopt(int param, int value)
{
	if (hz_unlikely(hz_mode_off))
		return HZ_GLIBC(int (*)(int, int), mallopt)(param, value);
	(void)value;
	if (hz_option_values[HZ_OPT_VERBOSE].set && hz_option_values[HZ_OPT_VERBOSE].num) {
		char num[16];
		snprintf(num, sizeof num, "%d", param);
		hz_log("mallopt: ignoring glibc option ", num, " (see HUGEZERO_* options)");
	}
	return 1;
}

/* ---- jemalloc's extended API, routed by owner ----
 * Programs built for jemalloc (Debian's redis-server) call these on
 * pointers they got from malloc: each reaches whoever owns the pointer.
 * Large requests with no alignment above a page and no explicit jemalloc
 * arena go to the hugepage arenas, as malloc's do; the rest to the
 * embedded jemalloc, flags and all. */

/* Off mode: the extended API on glibc's blocks (alignment and zeroing
 * honoured; sizes as glibc gives them; nothing resized in place). */
static HZ_NOINLINE void *off_mallocx(size_t size, int flags)
{
	size_t align = HZ_JE_ALIGN_OF(flags);
	void *p = align > 16 ? hz_glibc_memalign(align, size) : hz_glibc_malloc(size);
	if (p && (flags & HZ_JE_ZERO))
		memset(p, 0, size);
	return p;
}

static HZ_NOINLINE void *off_rallocx(void *p, size_t size, int flags)
{
	size_t old = malloc_usable_size(p);
	void *q = off_mallocx(size, flags);
	if (q) {
		memcpy(q, p, old < size ? old : size);
		free(p); /* by owner */
	}
	return q;
}

static int large_flags_ok(size_t size, int flags)
{
	return large_ok(size) && HZ_JE_ALIGN_OF(flags) <= HZ_PAGE && !(flags & HZ_JE_ARENA_MASK);
}

HZ_EXPORT void *mallocx(size_t size, int flags)
{
	hz_mode_decide();
	if (hz_unlikely(hz_mode_off))
		return off_mallocx(size, flags);
	if (large_flags_ok(size, flags))
		return hz_large_alloc(size, flags & HZ_JE_ZERO);
	if ((flags & HZ_JE_ZERO) && size >= HZ_JE_CLEAR_MIN && size < HZ_LARGE_MIN_DEFAULT)
		return calloc_cleared(size, flags & ~HZ_JE_ZERO);
	return hz_je_mallocx(size, flags);
}

HZ_EXPORT size_t nallocx(size_t size, int flags)
{
	hz_mode_decide();
	if (hz_unlikely(hz_mode_off))
		return size; /* glibc gives at least that */
	if (large_flags_ok(size, flags))
		return hz_large_good_size(size);
	return hz_je_nallocx(size, flags);
}

HZ_EXPORT size_t sallocx(const void *p, int flags)
{
	(void)flags;
	return malloc_usable_size((void *)p);
}

/* The arenas' blocks, and every block in off mode, go back as free takes
 * them (its counting, errno and bad-pointer checks); jemalloc's with
 * their flags. */
HZ_EXPORT void dallocx(void *p, int flags)
{
	if (hz_unlikely(hz_mode_off | hz_large_owns(p))) {
		free(p);
		return;
	}
	hz_count_free();
	hz_je_dallocx(p, flags);
}

HZ_EXPORT void sdallocx(void *p, size_t size, int flags)
{
	if (hz_unlikely(hz_mode_off | hz_large_owns(p))) {
		free(p);
		return;
	}
	hz_count_free();
	hz_je_sdallocx(p, size, flags);
}

/* Moves the block when needed; with MALLOCX_ZERO the bytes past the old
 * size read as zero. NULL (p untouched) when memory is exhausted. */
HZ_EXPORT void *rallocx(void *p, size_t size, int flags)
{
	if (hz_unlikely(hz_mode_off))
		return off_rallocx(p, size, flags);
	int mine = hz_large_owns(p);
	size_t old = mine ? hz_large_usable(p) : 0;
	if (mine && !old)
		bad_pointer("rallocx(): invalid pointer");
	int large = large_flags_ok(size, flags);
	if (mine && large && !(flags & HZ_JE_ZERO))
		return hz_large_realloc(p, size);
	if (!mine && !large)
		return hz_je_rallocx(p, size, flags);
	/* Between owners, or zeroing: a new block, the bytes copied. */
	size_t have = mine ? old : hz_je_sallocx(p, 0);
	void *q = mallocx(size, flags);
	if (!q)
		return NULL;
	memcpy(q, p, have < size ? have : size);
	dallocx(p, 0);
	return q;
}

/* Resizes in place only, to at least size and at most size + extra bytes
 * where it can; returns the usable size after. */
HZ_EXPORT size_t xallocx(void *p, size_t size, size_t extra, int flags)
{
	if (hz_unlikely(hz_mode_off))
		return malloc_usable_size(p);
	if (hz_unlikely(hz_large_owns(p))) {
		size_t old = hz_large_usable(p);
		size_t want = size + extra < size ? SIZE_MAX : size + extra;
		if (hz_large_resize(p, want) < size && want != size)
			hz_large_resize(p, size);
		size_t now = hz_large_usable(p);
		if ((flags & HZ_JE_ZERO) && now > old) /* the pages it grew into */
			hz_clear((char *)p + old, now - old);
		return now;
	}
	return hz_je_xallocx(p, size, extra, flags);
}

/* jemalloc's control and statistics interface: the embedded jemalloc's
 * (small blocks); the arenas report through malloc_stats and mallinfo2. */
HZ_EXPORT int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
	return hz_je_mallctl(name, oldp, oldlenp, newp, newlen);
}

HZ_EXPORT int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp)
{
	return hz_je_mallctlnametomib(name, mibp, miblenp);
}

HZ_EXPORT int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
			   void *newp, size_t newlen)
{
	return hz_je_mallctlbymib(mib, miblen, oldp, oldlenp, newp, newlen);
}

HZ_EXPORT void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
				  const char *opts)
{
	hz_je_malloc_stats_print(write_cb, cbopaque, opts);
}
