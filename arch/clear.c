/* The hinted clear: whole extents per kernel call, the page the caller
 * touches first cleared last with cache-allocating stores; from
 * HZ_LEARN_MIN the far sections' kernel is learnt as memset's is. */
#include "../os/os.h"
#include "arch.h"

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

unsigned hz_zero_hinted(void *p, size_t n, const void *hint, struct hz_section done[3])
{
	unsigned k = hz_clear_plan(p, n, hint, done);
	for (unsigned i = 0; i < k; i++) {
		char *at = (char *)p + done[i].off;
		/* Only a far section is that long: its kernel as memset's of
		 * that size, learnt (learn.c), not the cache sizes' rule. */
		if (hz_learns(done[i].len))
			done[i].kernel = hz_learn_fill(at, 0, done[i].len);
		else
			hz_fill(done[i].kernel, at, 0, done[i].len);
	}
	return k;
}
