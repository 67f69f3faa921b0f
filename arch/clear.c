/* The hinted clear: whole extents per kernel call, the page the caller
 * touches first cleared last with cache-allocating stores. */
#include <errno.h>

#include "arch.h"
#include "../include/hugezero.h"

unsigned hz_clear_plan(const void *p, size_t n, const void *hint, struct hz_section out[3])
{
	uintptr_t base = (uintptr_t)p, h = (uintptr_t)hint;
	/* The far sections are picked by the whole extent: whether it fits in
	 * cache decides between temporal and streaming stores. */
	unsigned far = hz_policy_pick(&hz_policy, 0, n);
	unsigned k = 0;

	if (n == 0)
		return 0;
	if (h < base || h - base >= n) {
		out[0] = (struct hz_section){0, n, far};
		return 1;
	}
	size_t ps = hz_page_size;
	size_t page = (h & ~(uintptr_t)(ps - 1)) - base; /* may wrap below base */
	size_t lo = h - base < (h & (ps - 1)) + HZ_HINT_NEIGHBOURS * ps
			    ? 0 : page - HZ_HINT_NEIGHBOURS * ps;
	size_t room = n - (h - base); /* bytes from the hint to the end */
	size_t above = ps - (h & (ps - 1)) + HZ_HINT_NEIGHBOURS * ps;
	size_t hi = room <= above ? n : (h - base) + above;

	if (hi < n)
		out[k++] = (struct hz_section){hi, n - hi, far};
	if (lo > 0)
		out[k++] = (struct hz_section){0, lo, far};
	out[k++] = (struct hz_section){lo, hi - lo, hz_policy.near};
	return k;
}

HZ_EXPORT void *hz_clear(void *p, size_t n)
{
	hz_fill_with(hz_policy_pick(&hz_policy, 0, n), p, 0, n);
	return p;
}

HZ_EXPORT int hz_clear_pages(void *p, size_t npages)
{
	size_t ps = hz_page_size;
	if (((uintptr_t)p & (ps - 1)) || npages > SIZE_MAX / ps ||
	    npages * ps > UINTPTR_MAX - (uintptr_t)p) {
		errno = EINVAL;
		return -1;
	}
	hz_clear(p, npages * ps);
	return 0;
}

HZ_EXPORT void *hz_clear_hinted(void *p, size_t n, const void *hint)
{
	struct hz_section s[3];
	unsigned k = hz_clear_plan(p, n, hint, s);
	if (k > 1 && n >= HZ_COUNT_MIN)
		__atomic_fetch_add(&hz_counters_raw.hinted_calls, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < k; i++)
		hz_fill_with(s[i].kernel, (char *)p + s[i].off, 0, s[i].len);
	return p;
}
