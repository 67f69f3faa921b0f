/* The public hz_* functions (include/hugezero.h): thin wrappers over the
 * engine, the counters and the report. */
#include <errno.h>

#include "../os/os.h"
#include "../include/hugezero.h"
#include "../obs/obs.h"
#include "preload.h"

HZ_INIT_LINK; /* the constructor comes with this file (init.c) */

HZ_EXPORT void *hz_clear(void *p, size_t n)
{
	return hz_fill_counted(p, 0, n);
}

HZ_EXPORT int hz_clear_pages(void *p, size_t npages)
{
	size_t ps = hz_page_size;
	if (((uintptr_t)p & (ps - 1)) || npages > SIZE_MAX / ps ||
	    npages * ps > UINTPTR_MAX - (uintptr_t)p) {
		errno = EINVAL;
		return -1;
	}
	hz_fill_counted(p, 0, npages * ps);
	return 0;
}

HZ_EXPORT void *hz_clear_hinted(void *p, size_t n, const void *hint)
{
	return hz_zero_hinted_counted(p, n, hint);
}

HZ_EXPORT int hz_stat(const char *name, uint64_t *value)
{
	return hz_stats_find(name, value);
}

HZ_EXPORT int hz_stats_dump(const char *path, const char *format)
{
	return hz_stats_write(path, format);
}

HZ_EXPORT const char *hz_kernel_for(int c, size_t n)
{
	if (n <= HZ_FRONT_MAX)
		return "front";
	return hz_kernels[hz_policy_pick_learnt(c, n)].name;
}
