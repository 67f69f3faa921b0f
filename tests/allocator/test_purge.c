/* A chunk's purge, linked against its room and those below it only:
 * whole free huge pages released in one batch and never a huge page in
 * use; the partial edge only for malloc_trim; at most `most` bytes, the
 * highest first; clean and populated pages counted; the zeroer's claimed
 * pages kept. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../allocator/allocator.h"

static int all_bytes(const unsigned char *p, size_t n, unsigned char c, size_t *bad_at)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c) {
			*bad_at = i;
			return 0;
		}
	return 1;
}

static struct hz_chunk *new_chunk(void)
{
	struct hz_chunk *c = malloc(sizeof *c);
	cr_assert_not_null(c);
	cr_assert_eq(hz_chunk_init(c, 0), 0);
	return c;
}

static void done(struct hz_chunk *c)
{
	hz_chunk_destroy(c);
	free(c);
}

/* n huge pages taken, written with 0x77 and freed: free and dirty. */
static unsigned char *dirty_run(struct hz_chunk *c, size_t huge_pages)
{
	unsigned char *p = hz_chunk_alloc(c, huge_pages * HZ_HUGE_PAGES);
	cr_assert_not_null(p);
	hz_chunk_mark_dirty(c, p);
	memset(p, 0x77, huge_pages * HZ_HUGE_SIZE);
	hz_chunk_free(c, p);
	return p;
}

Test(purge, whole_free_huge_pages_only)
{
	struct hz_chunk *c = new_chunk();
	size_t hp = HZ_HUGE_PAGES, bad;
	/* Three huge pages' worth, dirtied; then free all but one page of
	 * the third: huge pages 0 and 1 are free and dirty, 2 is in use. */
	unsigned char *a = hz_chunk_alloc(c, 2 * hp), *b = hz_chunk_alloc(c, hp - 1);
	unsigned char *keep = hz_chunk_alloc(c, 1);
	cr_assert(a && b && keep);
	hz_chunk_mark_dirty(c, a);
	hz_chunk_mark_dirty(c, b);
	hz_chunk_mark_dirty(c, keep);
	memset(a, 0x77, (3 * hp) << HZ_PAGE_SHIFT);
	hz_chunk_free(c, a);
	hz_chunk_free(c, b);
	cr_assert_eq(hz_chunk_count_free(c, c->dirty), 3 * hp - 1);

	struct hz_purge_result res;
	size_t released = hz_purge_chunk(c, 0, SIZE_MAX, &res);
	cr_assert_eq(released, 2 * HZ_HUGE_SIZE, "released %zu", released);
	cr_assert_eq(res.batch.ranges, 1, "adjacent huge pages go as one range");
	cr_assert_eq(res.batch.error, 0);
	cr_assert_eq(res.clean_bytes, 0, "nothing was clean");
	cr_assert(all_bytes(a, 2 * HZ_HUGE_SIZE, 0, &bad), "released memory reads zero");
	cr_assert(all_bytes(b, (hp - 1) << HZ_PAGE_SHIFT, 0x77, &bad),
		  "a huge page in use was split");
	cr_assert_eq(keep[0], 0x77);
	cr_assert_eq(hz_chunk_count_free(c, c->dirty), hp - 1);
	cr_assert_eq(hz_purge_chunk(c, 0, SIZE_MAX, NULL), 0, "nothing whole is left");

	/* Released pages are known zero: calloc over them clears nothing. */
	unsigned char *z = hz_chunk_alloc(c, 2 * hp);
	cr_assert_eq(z, a);
	cr_assert_eq(hz_chunk_calloc_clear(c, z), 2 * HZ_HUGE_SIZE);

	/* malloc_trim: the partial edge goes too. */
	cr_assert_eq(hz_purge_chunk(c, 1, SIZE_MAX, &res), (hp - 1) << HZ_PAGE_SHIFT);
	cr_assert(all_bytes(b, (hp - 1) << HZ_PAGE_SHIFT, 0, &bad));
	cr_assert_eq(keep[0], 0x77, "a live page was released");
	cr_assert_eq(hz_chunk_count_free(c, c->dirty), 0);
	done(c);
}

Test(purge, most_bytes_the_highest_first)
{
	struct hz_chunk *c = new_chunk();
	unsigned char *p = dirty_run(c, 4);
	size_t bad;
	cr_assert_eq(hz_purge_chunk(c, 0, HZ_HUGE_SIZE, NULL), HZ_HUGE_SIZE, "one huge page");
	cr_assert(all_bytes(p + 3 * HZ_HUGE_SIZE, HZ_HUGE_SIZE, 0, &bad), "the highest went");
	cr_assert(all_bytes(p, 3 * HZ_HUGE_SIZE, 0x77, &bad), "the lower ones stay, dirty");
	cr_assert_eq(hz_chunk_count_free(c, c->dirty), 3 * HZ_HUGE_PAGES);
	cr_assert_eq(hz_purge_chunk(c, 0, HZ_HUGE_SIZE + 1, NULL), 2 * HZ_HUGE_SIZE,
		     "whole huge pages, never split: the last passes most");
	cr_assert(all_bytes(p, HZ_HUGE_SIZE, 0x77, &bad), "the lowest stays");
	cr_assert_eq(hz_purge_chunk(c, 0, 0, NULL), 0, "most 0: nothing");
	done(c);
}

Test(purge, clean_and_populated_pages_counted)
{
	struct hz_chunk *c = new_chunk();
	dirty_run(c, 2);
	/* The zeroer cleared the first huge page, populated half of the second. */
	hz_chunk_set_clean(c, 0, HZ_HUGE_PAGES, 0);
	hz_chunk_set_clean(c, HZ_HUGE_PAGES, HZ_HUGE_PAGES + HZ_HUGE_PAGES / 2, 1);
	struct hz_purge_result res;
	cr_assert_eq(hz_purge_chunk(c, 0, SIZE_MAX, &res), 2 * HZ_HUGE_SIZE);
	cr_assert_eq(res.clean_bytes, HZ_HUGE_SIZE + HZ_HUGE_SIZE / 2, "clean %zu", res.clean_bytes);
	cr_assert_eq(res.populated_bytes, HZ_HUGE_SIZE / 2);
	cr_assert_eq(hz_chunk_count_free(c, c->dirty) + hz_chunk_count_free(c, c->clean), 0,
		     "released pages are neither dirty nor clean");
	done(c);
}

Test(purge, the_zeroers_claimed_pages_kept)
{
	struct hz_chunk *c = new_chunk();
	unsigned char *p = dirty_run(c, 3);
	size_t bad;
	hz_chunk_set_busy(c, HZ_HUGE_PAGES + 10, HZ_HUGE_PAGES + 20);
	cr_assert_eq(hz_purge_chunk(c, 0, SIZE_MAX, NULL), 2 * HZ_HUGE_SIZE);
	cr_assert(all_bytes(p + HZ_HUGE_SIZE, HZ_HUGE_SIZE, 0x77, &bad), "the claimed huge page stays");
	cr_assert(all_bytes(p, HZ_HUGE_SIZE, 0, &bad) && all_bytes(p + 2 * HZ_HUGE_SIZE, HZ_HUGE_SIZE, 0, &bad));
	done(c);
}
