/* One hugepage chunk: page runs, the known-zero state calloc relies on,
 * and purges that release only whole free 2 MiB blocks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../allocator/allocator.h"
#include "../util/fillcheck.h"

static struct hz_chunk *new_chunk(void)
{
	struct hz_chunk *c = malloc(sizeof *c);
	cr_assert_not_null(c);
	cr_assert_eq(hz_chunk_init(c, 0), 0);
	cr_assert_eq((uintptr_t)c->base % HZ_CHUNK_SIZE, 0);
	return c;
}

static void done(struct hz_chunk *c)
{
	hz_chunk_destroy(c);
	free(c);
}

Test(chunk, runs_coalesce_and_bad_pointers)
{
	struct hz_chunk *c = new_chunk();
	unsigned char *a = hz_chunk_alloc(c, 10), *b = hz_chunk_alloc(c, 20), *d = hz_chunk_alloc(c, 5);
	cr_assert(a && b && d);
	cr_assert_eq(b, a + 10 * HZ_PAGE, "first fit");
	cr_assert_eq(d, b + 20 * HZ_PAGE);
	cr_assert_eq(hz_chunk_block_pages(c, b), 20);
	cr_assert_eq(hz_chunk_block_pages(c, b + HZ_PAGE), 0, "interior pointer");
	cr_assert_eq(hz_chunk_block_pages(c, b + 1), 0, "unaligned pointer");
	cr_assert_eq(hz_chunk_block_pages(c, c->base + HZ_CHUNK_SIZE), 0, "past the chunk");
	cr_assert_eq(hz_chunk_block_pages(c, (unsigned char *)c->base - HZ_PAGE), 0, "before it");
	cr_assert_eq(hz_chunk_free(c, a), 10);
	cr_assert_eq(hz_chunk_free(c, a), 0, "double free must be refused");
	cr_assert_eq(hz_chunk_free(c, b), 20);
	/* a and b coalesced: 30 pages fit before d. */
	cr_assert_eq(hz_chunk_alloc(c, 30), a);
	cr_assert_eq(c->free_pages, HZ_CHUNK_PAGES - 35);
	cr_assert_null(hz_chunk_alloc(c, HZ_CHUNK_PAGES), "larger than what is free");
	cr_assert_null(hz_chunk_alloc(c, 0));
	done(c);
}

/* An aligned run starts on its alignment, past a free gap too short or
 * misplaced for it, which later runs still take. */
Test(chunk, aligned_runs)
{
	struct hz_chunk *c = new_chunk();
	unsigned char *a = hz_chunk_alloc(c, 3);
	unsigned char *h = hz_chunk_alloc_avoiding(c, 10, HZ_HUGE_PAGES, HZ_FIT_ANY);
	cr_assert_eq(h, c->base + HZ_HUGE_SIZE, "the first huge page boundary after the taken pages");
	cr_assert_eq(hz_chunk_block_pages(c, h), 10);
	unsigned char *b = hz_chunk_alloc_avoiding(c, 4, 16, HZ_FIT_ANY);
	cr_assert_eq(b, a + 16 * HZ_PAGE, "the gap's first multiple of 16 pages");
	cr_assert_eq(hz_chunk_alloc(c, 12), a + 3 * HZ_PAGE, "the gap before it, unaligned");
	cr_assert_eq(c->free_pages, HZ_CHUNK_PAGES - 29);
	/* One page on a huge page, not in the free pages after h: past them. */
	cr_assert_eq(hz_chunk_alloc_avoiding(c, 1, HZ_HUGE_PAGES, HZ_FIT_ANY), c->base + 2 * HZ_HUGE_SIZE);
	/* h freed: a whole huge page fits exactly where it was. */
	cr_assert_eq(hz_chunk_free(c, h), 10);
	cr_assert_eq(hz_chunk_alloc_avoiding(c, HZ_HUGE_PAGES, HZ_HUGE_PAGES, HZ_FIT_ANY), h);
	done(c);
}

Test(chunk, calloc_clears_only_dirty_pages)
{
	struct hz_chunk *c = new_chunk();
	size_t bad;
	/* Fresh pages: nothing to clear. */
	unsigned char *a = hz_chunk_alloc(c, 8);
	cr_assert_eq(hz_chunk_calloc_clear(c, a), 8 * HZ_PAGE);
	cr_assert(all_bytes(a, 8 * HZ_PAGE, 0, &bad));
	hz_chunk_mark_dirty(c, a);
	memset(a, 0x5C, 8 * HZ_PAGE);
	cr_assert_eq(hz_chunk_free(c, a), 8);
	/* 12 pages over the 8 dirty ones and 4 fresh: only 8 are cleared. */
	unsigned char *b = hz_chunk_alloc(c, 12);
	cr_assert_eq(b, a);
	cr_assert_eq(hz_chunk_calloc_clear(c, b), 4 * HZ_PAGE);
	cr_assert(all_bytes(b, 12 * HZ_PAGE, 0, &bad), "byte %zu not zero", bad);
	/* Blocks carved out of a dirty run are cleared whole. */
	hz_chunk_mark_dirty(c, b);
	memset(b, 0x11, 12 * HZ_PAGE);
	hz_chunk_free(c, b);
	unsigned char *x = hz_chunk_alloc(c, 3), *y = hz_chunk_alloc(c, 4);
	cr_assert_eq(hz_chunk_calloc_clear(c, x), 0);
	cr_assert_eq(hz_chunk_calloc_clear(c, y), 0);
	cr_assert(all_bytes(x, 3 * HZ_PAGE, 0, &bad));
	cr_assert(all_bytes(y, 4 * HZ_PAGE, 0, &bad));
	cr_assert_eq(hz_chunk_calloc_clear(c, y), 4 * HZ_PAGE, "cleared pages stay known zero");
	done(c);
}

/* More dirty runs than a plan holds (HZ_ZERO_RUNS): the last planned run
 * reaches the block's end, every byte reads zero, and the plan reports
 * what it left alone. */
Test(chunk, calloc_plan_with_many_dirty_runs)
{
	struct hz_chunk *c = new_chunk();
	enum { RUNS = 3 * HZ_ZERO_RUNS };
	/* A fresh block whose odd page pairs are written and marked dirty
	 * (the bitmap set here directly: frees dirty whole blocks). */
	unsigned char *p = hz_chunk_alloc(c, 4 * RUNS);
	cr_assert_not_null(p);
	size_t first = (size_t)(p - c->base) / HZ_PAGE;
	for (size_t k = 2; k < 4 * RUNS; k += 4)
		for (size_t q = first + k; q < first + k + 2; q++) {
			c->dirty[q / 64] |= (uint64_t)1 << (q % 64);
			memset(c->base + q * HZ_PAGE, 0xA7, HZ_PAGE);
		}
	struct hz_zero_plan plan;
	hz_chunk_zero_plan(c, p, &plan);
	cr_assert_eq(plan.n, HZ_ZERO_RUNS);
	cr_assert_eq(plan.hinted, 0, "the first page was clean");
	cr_assert_eq(plan.hi[plan.n - 1], first + 4 * RUNS, "the last run reaches the end");
	/* 2 clean pages before each of the first 15 runs, and the first
	 * clean pair, are all that is left alone. */
	cr_assert_eq(plan.known_zero, (size_t)(2 * HZ_ZERO_RUNS) * HZ_PAGE, "%zu", plan.known_zero);
	hz_chunk_zero_runs(c, &plan, p);
	size_t bad;
	cr_assert(all_bytes(p, 4 * RUNS * HZ_PAGE, 0, &bad), "byte %zu not zero", bad);
	done(c);
}

/* A release marks only the pages that were in memory: a block taken
 * over them later counts those as refaulted, not the fresh ones beside
 * them; an in-place growth over released pages counts them too. */
Test(chunk, released_pages_are_the_ones_in_memory)
{
	struct hz_chunk *c = new_chunk();
	size_t hp = HZ_HUGE_PAGES;
	/* A huge page whose first half was used, then freed: half dirty,
	 * half fresh. */
	unsigned char *a = hz_chunk_alloc(c, hp / 2);
	cr_assert_eq(a, c->base);
	hz_chunk_mark_dirty(c, a);
	hz_chunk_free(c, a);
	cr_assert_eq(hz_purge_chunk(c, 0, SIZE_MAX, NULL), HZ_HUGE_SIZE);
	cr_assert_eq(hz_bits_count(c->released, 0, hp), hp / 2, "only the dirty half is released");
	unsigned char *b = hz_chunk_alloc(c, hp);
	cr_assert_eq(b, c->base);
	cr_assert_eq(c->taken_released, hp / 2);
	cr_assert_eq(c->taken_fresh, hp, "released and fresh pages are both not in memory");
	hz_chunk_mark_dirty(c, b);
	cr_assert(hz_chunk_free(c, b));
	/* Growth in place: a block of a quarter, the rest released. */
	cr_assert_eq(hz_purge_chunk(c, 0, SIZE_MAX, NULL), HZ_HUGE_SIZE);
	unsigned char *g = hz_chunk_alloc(c, hp / 4);
	cr_assert_eq(c->taken_released, hp / 4);
	cr_assert_eq(hz_chunk_resize(c, g, hp), 0);
	cr_assert_eq(c->taken_released, hp - hp / 4, "the growth takes the rest, released");
	cr_assert_eq(hz_chunk_resize(c, g, hp / 2), 0);
	cr_assert_eq(c->taken_released, 0, "a shrink takes nothing");
	done(c);
}

static long meminfo(const char *field)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = atol(line + n + 1);
	if (f)
		fclose(f);
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* A chunk from the hugetlb pool: with too few free pages it falls back to
 * transparent huge pages; with 32 reserved (as root) it takes them, its
 * memory works, a purge gives whole pages back to the pool and a partial
 * one is never attempted. */
Test(chunk, hugetlb_pool_and_fallback, .timeout = 60)
{
	static const char nr[] = "/proc/sys/vm/nr_hugepages";
	long total = meminfo("HugePages_Total");
	long free0 = meminfo("HugePages_Free") - meminfo("HugePages_Rsvd");
	cr_assert(total >= 0 && free0 >= 0);
	struct hz_chunk *c = malloc(sizeof *c);
	cr_assert_not_null(c);
	if (free0 < (long)(HZ_CHUNK_SIZE / HZ_HUGE_SIZE)) {
		cr_assert_eq(hz_chunk_init(c, 1), 0);
		cr_assert_eq(c->hugetlb, 0, "a short pool must fall back");
		unsigned char *p = hz_chunk_alloc(c, 4);
		cr_assert_not_null(p);
		memset(p, 1, 4 * HZ_PAGE);
		hz_chunk_destroy(c);
	}
	if (write_long(nr, total + 32)) {
		free(c);
		cr_skip_test("cannot reserve hugetlb pages here (not root)");
	}
	long free1 = meminfo("HugePages_Free") - meminfo("HugePages_Rsvd");
	if (free1 < 32) {
		write_long(nr, total);
		free(c);
		cr_skip_test("the kernel found only %ld free huge pages", free1);
	}
	int r = hz_chunk_init(c, 1);
	int from_pool = c->hugetlb;
	/* Reserved at map time: free, less reserved, drops by 32. */
	long taken = free1 - (meminfo("HugePages_Free") - meminfo("HugePages_Rsvd"));
	size_t bad;
	unsigned char *a = r ? NULL : hz_chunk_alloc(c, 3 * HZ_HUGE_PAGES);
	if (a) {
		hz_chunk_mark_dirty(c, a);
		memset(a, 0x42, 3 * HZ_HUGE_SIZE);
		cr_assert(all_bytes(a, 3 * HZ_HUGE_SIZE, 0x42, &bad));
		unsigned char *keep = hz_chunk_alloc(c, 1);
		hz_chunk_mark_dirty(c, keep);
		keep[0] = 7;
		hz_chunk_free(c, a);
		/* Partial pages are never released from hugetlb chunks. */
		size_t released = hz_purge_chunk(c, 1, SIZE_MAX, NULL);
		cr_assert_eq(released, 3 * HZ_HUGE_SIZE, "released %zu", released);
		cr_assert(all_bytes(a, 3 * HZ_HUGE_SIZE, 0, &bad));
		cr_assert_eq(keep[0], 7);
		hz_chunk_destroy(c);
	}
	write_long(nr, total);
	free(c);
	cr_assert_eq(r, 0);
	cr_assert_eq(from_pool, 1, "32 free huge pages, yet not taken");
	cr_assert_eq(taken, 32, "the chunk reserved %ld huge pages", taken);
	cr_assert_not_null(a);
}

/* The first page of the first run of npages free pages whose start is a
 * multiple of align, from the used bits alone; HZ_CHUNK_PAGES if none. */
static size_t first_fit(const struct hz_chunk *c, size_t npages, size_t align)
{
	for (size_t at = 0; at + npages <= HZ_CHUNK_PAGES; at += align) {
		size_t k = 0;
		while (k < npages && !hz_bit(c->used, at + k))
			k++;
		if (k == npages)
			return at;
	}
	return HZ_CHUNK_PAGES;
}

/* Random allocate/free against a shadow: blocks never overlap, each is
 * the first fit, free page counts add up, every live block is reported
 * with its length. */
Test(chunk, random_against_shadow)
{
	struct hz_chunk *c = new_chunk();
	enum { MAXB = 400 };
	unsigned char *blk[MAXB];
	size_t len[MAXB], live = 0, used = 0;
	srand(42);
	for (int step = 0; step < 20000; step++) {
		if (live && (rand() % 2 || live == MAXB)) {
			size_t k = (size_t)rand() % live;
			if (rand() % 4 == 0) { /* resize in place, when it can */
				size_t n = 1 + (size_t)rand() % 128;
				if (hz_chunk_resize(c, blk[k], n) == 0) {
					used = used - len[k] + n;
					len[k] = n;
				}
				cr_assert_eq(hz_chunk_block_pages(c, blk[k]), len[k]);
				cr_assert_eq(c->free_pages, HZ_CHUNK_PAGES - used);
				continue;
			}
			cr_assert_eq(hz_chunk_free(c, blk[k]), len[k]);
			used -= len[k];
			blk[k] = blk[--live];
			len[k] = len[live];
		} else {
			size_t n = 1 + (size_t)rand() % (rand() % 8 ? 64 : 2048);
			size_t align = rand() % 4 ? 1 : (size_t)1 << (rand() % 10);
			size_t want = first_fit(c, n, align);
			unsigned char *p = hz_chunk_alloc_avoiding(c, n, align, HZ_FIT_ANY);
			cr_assert_eq(p ? (size_t)(p - c->base) / HZ_PAGE : HZ_CHUNK_PAGES, want,
				     "step %d: %zu pages aligned to %zu: not the first fit", step, n, align);
			if (!p)
				continue;
			for (size_t k = 0; k < live; k++)
				cr_assert(p + n * HZ_PAGE <= blk[k] || blk[k] + len[k] * HZ_PAGE <= p,
					  "step %d: overlap", step);
			blk[live] = p;
			len[live++] = n;
			used += n;
		}
		/* The zeroer's runs: a free dirty one cleared, or one not in
		 * memory populated, both published clean. */
		size_t lo, hi;
		if (step % 5 == 0 && !hz_chunk_next_run(c, step % 10 == 0, (size_t)rand() % HZ_CHUNK_PAGES, &lo, &hi)) {
			cr_assert(hi > lo && hi - lo <= HZ_HUGE_PAGES && lo / HZ_HUGE_PAGES == (hi - 1) / HZ_HUGE_PAGES,
				  "step %d: a run within one huge page", step);
			for (size_t k = 0; k < live; k++)
				cr_assert(c->base + hi * HZ_PAGE <= blk[k] || blk[k] + len[k] * HZ_PAGE <= c->base + lo * HZ_PAGE,
					  "step %d: the run overlaps a live block", step);
			hz_chunk_set_clean(c, lo, hi, step % 10 != 0); /* populated: it was not in memory */
		}
		cr_assert_eq(c->free_pages, HZ_CHUNK_PAGES - used);
		cr_assert_eq(c->dirty_free, hz_chunk_count_free(c, c->dirty), "step %d", step);
		cr_assert_eq(c->clean_free, hz_chunk_count_free(c, c->clean), "step %d", step);
		for (size_t w = 0; w < HZ_CHUNK_WORDS; w++) {
			cr_assert_eq(hz_bit(c->open, w), c->used[w] != ~0ull, "step %d: word %zu's open bit", step, w);
			cr_assert_eq(c->clean[w] & c->used[w], 0, "step %d: a live page marked clean", step);
			cr_assert_eq(c->populated[w] & ~c->clean[w], 0, "step %d: a populated page not clean", step);
		}
		if (step % 997 == 0) {
			hz_purge_chunk(c, step & 1, SIZE_MAX, NULL);
			cr_assert_eq(c->dirty_free, hz_chunk_count_free(c, c->dirty), "after purge");
			cr_assert_eq(c->clean_free, hz_chunk_count_free(c, c->clean), "after purge");
		}
	}
	for (size_t k = 0; k < live; k++)
		cr_assert_eq(hz_chunk_block_pages(c, blk[k]), len[k]);
	done(c);
}

/* The bit-range helpers against one bit at a time: every range of a
 * 4-word array, empty ones, single words and the array's end included. */
Test(chunk, bit_ranges)
{
	enum { W = 4, B = W * 64 };
	uint64_t a[W], b[W], d[W], want[W];
	srand(7);
	for (size_t i = 0; i <= B; i++) {
		for (size_t j = i; j <= B; j += 1 + (j % 7 == 0 ? 0 : (size_t)rand() % 5)) {
			for (int w = 0; w < W; w++) {
				a[w] = ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 11) ^ (uint64_t)rand();
				b[w] = ((uint64_t)rand() << 33) ^ (uint64_t)rand();
				d[w] = (uint64_t)rand();
			}
			size_t n = 0;
			for (size_t k = i; k < j; k++)
				n += (size_t)hz_bit(a, k);
			cr_assert_eq(hz_bits_count(a, i, j), n, "count [%zu, %zu)", i, j);
			for (int v = 0; v < 2; v++) {
				memcpy(want, a, sizeof a);
				for (size_t k = i; k < j; k++)
					want[k >> 6] = v ? want[k >> 6] | 1ull << (k & 63) : want[k >> 6] & ~(1ull << (k & 63));
				uint64_t got[W];
				memcpy(got, a, sizeof a);
				hz_bits_set(got, i, j, v);
				cr_assert_arr_eq(got, want, sizeof got, "set [%zu, %zu) to %d", i, j, v);
			}
			memcpy(want, d, sizeof d);
			for (size_t k = i; k < j; k++)
				if (hz_bit(a, k) || hz_bit(b, k))
					want[k >> 6] |= 1ull << (k & 63);
			hz_bits_or(d, a, b, i, j);
			cr_assert_arr_eq(d, want, sizeof d, "or [%zu, %zu)", i, j);
		}
	}
	for (int k = 0; k < 64; k++)
		cr_assert_eq(hz_popcount64(~0ull >> k), 64u - (unsigned)k);
}
