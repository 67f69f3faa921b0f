/* The hinted clear: its plan, and the engine's clear by it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../os/os.h"
#include "../../arch/arch.h"
#include "../util/fillcheck.h"
#include "../util/guard.h"

/* Checks the plan's invariants and returns the neighbourhood section. */
static struct hz_section plan_ok(const unsigned char *p, size_t n, const void *hint)
{
	struct hz_section s[3];
	unsigned k = hz_clear_plan(p, n, hint, s);
	cr_assert(k >= 1 && k <= 3, "n=%zu: %u sections", n, k);
	size_t covered = 0;
	for (unsigned i = 0; i < k; i++) {
		cr_assert_gt(s[i].len, 0, "empty section %u", i);
		cr_assert_leq(s[i].off + s[i].len, n);
		for (unsigned j = 0; j < i; j++)
			cr_assert(s[i].off + s[i].len <= s[j].off || s[j].off + s[j].len <= s[i].off,
				  "sections %u and %u overlap", i, j);
		covered += s[i].len;
	}
	cr_assert_eq(covered, n, "sections cover %zu of %zu bytes", covered, n);
	/* Order: right of the neighbourhood, left of it, neighbourhood last. */
	struct hz_section last = s[k - 1];
	for (unsigned i = 0; i + 1 < k; i++)
		cr_assert(s[i].off != last.off);
	if (k == 3) {
		cr_assert_gt(s[0].off, s[1].off, "right part must come before the left part");
	}
	return last;
}

Test(clear, plan_hint_positions)
{
	size_t ps = hz_page_size, n = 64 * ps;
	unsigned char *p = aligned_alloc(ps, n);
	cr_assert_not_null(p);

	/* At the start: neighbourhood is pages 0..2, cleared last. */
	struct hz_section nb = plan_ok(p, n, p);
	cr_assert_eq(nb.off, 0);
	cr_assert_eq(nb.len, 3 * ps);
	cr_assert_eq(nb.kernel, hz_policy.near);

	/* In the middle (inside page 30): pages 28..32. */
	nb = plan_ok(p, n, p + 30 * ps + 123);
	cr_assert_eq(nb.off, 28 * ps);
	cr_assert_eq(nb.len, 5 * ps);

	/* The last byte: pages 61..63. */
	nb = plan_ok(p, n, p + n - 1);
	cr_assert_eq(nb.off, 61 * ps);
	cr_assert_eq(nb.len, 3 * ps);

	/* Outside, on either side: one section, the whole region. */
	struct hz_section s[3];
	cr_assert_eq(hz_clear_plan(p, n, p + n, s), 1);
	cr_assert_eq(s[0].off, 0);
	cr_assert_eq(s[0].len, n);
	cr_assert_eq(hz_clear_plan(p, n, p - 1, s), 1);
	cr_assert_eq(hz_clear_plan(p, n, NULL, s), 1);
	cr_assert_eq(hz_clear_plan(p, 0, p, s), 0);
	free(p);
}

Test(clear, plan_unaligned_regions)
{
	/* Regions that start and end inside pages: the neighbourhood is the
	 * hint's page grid clamped to the region, for every hint position. */
	size_t ps = hz_page_size;
	unsigned char *buf = aligned_alloc(ps, 16 * ps);
	cr_assert_not_null(buf);
	unsigned char *p = buf + 100;
	size_t n = 12 * ps + 77;
	for (size_t h = 0; h < n; h += 97) {
		struct hz_section nb = plan_ok(p, n, p + h);
		uintptr_t hp = ((uintptr_t)(p + h)) & ~(uintptr_t)(ps - 1);
		uintptr_t lo = hp - 2 * ps < (uintptr_t)p ? (uintptr_t)p : hp - 2 * ps;
		uintptr_t hi = hp + 3 * ps > (uintptr_t)(p + n) ? (uintptr_t)(p + n) : hp + 3 * ps;
		cr_assert_eq((uintptr_t)p + nb.off, lo, "h=%zu", h);
		cr_assert_eq((uintptr_t)p + nb.off + nb.len, hi, "h=%zu", h);
	}
	free(buf);
}

/* hz_zero_hinted zeroes exactly the region, for hints everywhere, by the
 * plan's sections, which it returns. */
Test(clear, hinted_result_guarded, .timeout = 120)
{
	size_t ps = hz_page_size;
	size_t sizes[] = {1, 100, ps, 5 * ps + 3, 64 * ps, (size_t)64 << 20};
	struct guarded g;
	cr_assert_eq(guarded_alloc(&g, ((size_t)64 << 20) + 256), 0);
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
		size_t n = sizes[si];
		unsigned char *p = g.base + g.len - n - 3; /* tail 3 bytes from a guard */
		const void *hints[] = {p, p + n / 2, p + n - 1, p + n, g.base, NULL};
		for (size_t hi = 0; hi < sizeof hints / sizeof hints[0]; hi++) {
			memset(g.base, 0xC3, g.len);
			struct hz_section plan[3], done[3];
			unsigned k = hz_clear_plan(p, n, hints[hi], plan);
			cr_assert_eq(hz_zero_hinted(p, n, hints[hi], done), k);
			for (unsigned i = 0; i < k; i++)
				cr_assert(done[i].off == plan[i].off && done[i].len == plan[i].len &&
					  done[i].kernel == plan[i].kernel, "n=%zu hint %zu: section %u", n, hi, i);
			size_t bad;
			cr_assert(all_bytes(p, n, 0, &bad), "n=%zu hint %zu: byte %zu", n, hi, bad);
			cr_assert(all_bytes(g.base, (size_t)(p - g.base), 0xC3, &bad),
				  "n=%zu hint %zu: wrote below the region", n, hi);
			cr_assert(all_bytes(p + n, 3, 0xC3, &bad), "n=%zu: wrote above", n);
		}
	}
	guarded_free(&g);
}
