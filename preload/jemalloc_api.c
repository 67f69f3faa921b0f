/* jemalloc's extended API, routed by owner. Programs built for jemalloc
 * (Debian's redis-server) call these on pointers they got from malloc:
 * each reaches whoever owns the pointer. They take malloc's slow paths
 * with their flags (alloc.c): large requests aligned to at most a huge
 * page, with no explicit jemalloc arena, go to the hugepage arenas; the
 * rest to the embedded jemalloc, flags and all. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "../allocator/allocator.h"
#include "../obs/obs.h"
#include "preload.h"

HZ_INIT_LINK; /* the constructor comes with this file (init.c) */

HZ_EXPORT void *mallocx(size_t size, int flags)
{
	return hz_alloc_slow(size, flags);
}

HZ_EXPORT size_t nallocx(size_t size, int flags)
{
	if (hz_unlikely(!hz_allocator_started))
		hz_allocator_start();
	if (hz_unlikely(hz_mode_off))
		return size; /* glibc gives at least that */
	if (hz_alloc_large(size, flags))
		return hz_large_good_size(size);
	return hz_small.nallocx(size, flags);
}

HZ_EXPORT size_t sallocx(const void *p, int flags)
{
	(void)flags;
	return malloc_usable_size((void *)p);
}

/* A block that may be the arenas' (every block in off mode) goes back as
 * free takes it (its counting, errno and bad-pointer checks); jemalloc's
 * with their flags. */
HZ_EXPORT void dallocx(void *p, int flags)
{
	if (hz_unlikely(hz_reg_in_window(p))) {
		hz_free_slow(p);
		return;
	}
	hz_small.dallocx(p, flags);
}

HZ_EXPORT void sdallocx(void *p, size_t size, int flags)
{
	if (hz_unlikely(hz_reg_in_window(p))) {
		hz_free_slow(p);
		return;
	}
	hz_small.sdallocx(p, size, flags);
}

/* Moves the block when needed; with MALLOCX_ZERO the bytes past the old
 * size read as zero. NULL (p untouched) when memory is exhausted. */
HZ_EXPORT void *rallocx(void *p, size_t size, int flags)
{
	/* Size 0 is undefined for jemalloc, whose rallocx never frees: a
	 * byte, not realloc's free. */
	return hz_realloc_slow(p, size ? size : 1, flags);
}

/* Resizes in place only, to at least size and at most size + extra bytes
 * where it can; returns the usable size after. */
HZ_EXPORT size_t xallocx(void *p, size_t size, size_t extra, int flags)
{
	if (hz_unlikely(hz_mode_off))
		return malloc_usable_size(p);
	struct hz_owner o = hz_large_owner(p);
	if (hz_unlikely(hz_large_owns(o))) {
		size_t old = hz_large_usable(o, p);
		size_t want = size + extra < size ? SIZE_MAX : size + extra;
		if (hz_large_resize(o, p, want) < size && want != size)
			hz_large_resize(o, p, size);
		size_t now = hz_large_usable(o, p);
		if ((flags & HZ_JE_ZERO) && now > old) /* the pages it grew into */
			hz_fill_counted((char *)p + old, 0, now - old);
		return now;
	}
	return hz_small.xallocx(p, size, extra, flags);
}

/* jemalloc's control and statistics interface: the small engine's, the
 * embedded jemalloc's or (HUGEZERO_SMALL=next over a jemalloc) the next
 * one's; the arenas report through malloc_stats and mallinfo2. */
HZ_EXPORT int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
	if (hz_unlikely(!hz_allocator_started)) /* its tables are decided there */
		hz_allocator_start();
	if (hz_small_ctl.mallctl) /* the jemalloc that serves the small blocks */
		return hz_small_ctl.mallctl(name, oldp, oldlenp, newp, newlen);
	if (hz_small_tables_back())
		return EAGAIN;
	if (!hz_small_cache_ctl(name, NULL, 0, oldp, oldlenp, newp))
		return 0;
	return hz_small_mallctl(name, oldp, oldlenp, newp, newlen);
}

HZ_EXPORT int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp)
{
	if (hz_unlikely(!hz_allocator_started)) /* its tables are decided there */
		hz_allocator_start();
	if (hz_small_ctl.nametomib)
		return hz_small_ctl.nametomib(name, mibp, miblenp);
	if (hz_small_tables_back())
		return EAGAIN;
	return hz_je_mallctlnametomib(name, mibp, miblenp);
}

HZ_EXPORT int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
			   void *newp, size_t newlen)
{
	if (hz_unlikely(!hz_allocator_started)) /* its tables are decided there */
		hz_allocator_start();
	if (hz_small_ctl.bymib)
		return hz_small_ctl.bymib(mib, miblen, oldp, oldlenp, newp, newlen);
	if (hz_small_tables_back())
		return EAGAIN;
	if (!hz_small_cache_ctl(NULL, mib, miblen, oldp, oldlenp, newp))
		return 0;
	return hz_je_mallctlbymib(mib, miblen, oldp, oldlenp, newp, newlen);
}

HZ_EXPORT void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
				  const char *opts)
{
	if (hz_unlikely(!hz_allocator_started)) /* its tables are decided there */
		hz_allocator_start();
	if (hz_small_ctl.stats_print)
		hz_small_ctl.stats_print(write_cb, cbopaque, opts);
	else if (hz_small_tables_back()) /* as jemalloc's, where it cannot start */
		hz_os_log("malloc_stats_print: the embedded jemalloc cannot start: its tables cannot be "
			  "mapped",
			  NULL, NULL);
	else
		hz_je_malloc_stats_print(write_cb, cbopaque, opts);
}
