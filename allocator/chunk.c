/* Page runs and per-page zero state of one hugepage chunk (chunk.c). */
#include <errno.h>

#include "../obs/obs.h"
#include "allocator.h"

static size_t page_of(const struct hz_chunk *c, const void *p)
{
	return (size_t)((const unsigned char *)p - c->base) >> HZ_PAGE_SHIFT;
}

/* ---- chunk ---- */

int hz_chunk_init(struct hz_chunk *c, int hugetlb)
{
	hz_memzero(c, sizeof *c);
	if (hz_page_size != HZ_PAGE)
		return ENOMEM; /* another page size: chunks do not apply */
	void *base;
	if (hz_fresh_map(HZ_CHUNK_SIZE, &hugetlb, &c->advice, &base))
		return ENOMEM;
	c->hugetlb = hugetlb;
	c->base = base;
	c->free_pages = HZ_CHUNK_PAGES;
	hz_bits_set(c->open, 0, HZ_CHUNK_WORDS, 1);
	return 0;
}

void hz_chunk_destroy(struct hz_chunk *c)
{
	hz_os_unmap(c->base, HZ_CHUNK_SIZE);
	c->base = NULL;
}

/* Marks pages [i, j) (j > i) used (v = 1) or free, and their words'
 * bits in open as they now are. */
static void set_used(struct hz_chunk *c, size_t i, size_t j, int v)
{
	hz_bits_set(c->used, i, j, v);
	for (size_t w = i >> 6; w <= (j - 1) >> 6; w++)
		hz_bits_set(c->open, w, w + 1, c->used[w] != ~0ull);
}

/* The first free page from i, or HZ_CHUNK_PAGES: through open, over the
 * words of live blocks (a chunk of 1 MiB blocks is 4 full words each). */
static size_t next_free(const struct hz_chunk *c, size_t i)
{
	if (i >= HZ_CHUNK_PAGES)
		return HZ_CHUNK_PAGES;
	size_t w = i >> 6;
	uint64_t m = ~c->used[w] & (~0ull << (i & 63));
	if (m)
		return (w << 6) + (size_t)__builtin_ctzll(m);
	w = hz_bits_find(c->open, w + 1, HZ_CHUNK_WORDS, 1);
	return w < HZ_CHUNK_WORDS ? (w << 6) + (size_t)__builtin_ctzll(~c->used[w]) : HZ_CHUNK_PAGES;
}

/* Pages [i, i + npages), free, handed out. */
static void *take(struct hz_chunk *c, size_t i, size_t npages)
{
	size_t dirty = hz_bits_count(c->dirty, i, i + npages);
	size_t clean = hz_bits_count(c->clean, i, i + npages);
	c->dirty_free -= dirty;
	c->clean_free -= clean;
	c->taken_fresh = npages - dirty - clean;
	c->taken_clean = clean;
	c->taken_populated = hz_bits_count(c->populated, i, i + npages);
	c->taken_released = hz_bits_count(c->released, i, i + npages);
	hz_bits_set(c->released, i, i + npages, 0);
	hz_bits_set(c->populated, i, i + npages, 0);
	hz_bits_set(c->clean, i, i + npages, 0);
	hz_bits_set(c->shared, i, i + npages, 0);
	set_used(c, i, i + npages, 1);
	hz_bits_set(c->start, i, i + 1, 1);
	c->npages[i] = (uint32_t)npages;
	c->free_pages -= npages;
	return c->base + (i << HZ_PAGE_SHIFT);
}

void *hz_chunk_alloc_avoiding(struct hz_chunk *c, size_t npages, size_t align, int avoid)
{
	int avoid_busy = avoid != HZ_FIT_ANY;
	if (npages == 0 || npages > c->free_pages)
		return NULL;
	size_t blo = c->busy_lo, bhi = c->busy_hi;
	for (size_t i = next_free(c, 0); i < HZ_CHUNK_PAGES;) {
		size_t at = hz_round_up(i, align);
		if (avoid_busy && at < bhi && blo < at + npages)
			at = hz_round_up(bhi, align); /* past the zeroer's pages, if the run still fits */
		/* The run from i holds [at, end) when no page of [i, end) is used. */
		size_t end = at + npages, lim = end < HZ_CHUNK_PAGES ? end : HZ_CHUNK_PAGES;
		size_t j = hz_bits_find(c->used, i, lim, 1);
		if (j == end) {
			/* Avoiding, only pages in memory: waiting for the zeroer's
			 * step costs less than faulting fresh pages in. */
			if (avoid != HZ_FIT_IN_MEMORY ||
			    hz_bits_count(c->dirty, at, end) + hz_bits_count(c->clean, at, end) == npages)
				return take(c, at, npages);
			j = hz_bits_find(c->used, end, HZ_CHUNK_PAGES, 1); /* the run's end */
		}
		i = next_free(c, j);
	}
	return NULL;
}

void *hz_chunk_alloc(struct hz_chunk *c, size_t npages)
{
	return hz_chunk_alloc_avoiding(c, npages, 1, HZ_FIT_ANY);
}

size_t hz_chunk_block_pages(const struct hz_chunk *c, const void *p)
{
	const unsigned char *q = p;
	if (q < c->base || q >= c->base + HZ_CHUNK_SIZE || ((uintptr_t)q & (HZ_PAGE - 1)))
		return 0;
	size_t i = page_of(c, q);
	return hz_bit(c->start, i) ? c->npages[i] : 0;
}

size_t hz_chunk_free(struct hz_chunk *c, void *p)
{
	size_t n = hz_chunk_block_pages(c, p);
	if (!n)
		return 0;
	size_t i = page_of(c, p);
	hz_bits_set(c->start, i, i + 1, 0);
	c->npages[i] = 0;
	set_used(c, i, i + n, 0);
	hz_bits_set(c->dirty, i, i + n, 1);
	c->free_pages += n;
	c->dirty_free += n;
	return n;
}

int hz_chunk_resize(struct hz_chunk *c, void *p, size_t npages)
{
	size_t n = hz_chunk_block_pages(c, p), i = page_of(c, p);
	if (!n || npages == 0)
		return -1;
	c->taken_released = 0;
	if (npages <= n) {
		if (npages < n)
			set_used(c, i + npages, i + n, 0);
		hz_bits_set(c->dirty, i + npages, i + n, 1);
		c->free_pages += n - npages;
		c->dirty_free += n - npages;
	} else {
		if (npages > HZ_CHUNK_PAGES - i ||
		    hz_bits_find(c->used, i + n, i + npages, 1) != i + npages)
			return -1;
		c->dirty_free -= hz_bits_count(c->dirty, i + n, i + npages);
		c->clean_free -= hz_bits_count(c->clean, i + n, i + npages);
		hz_bits_set(c->populated, i + n, i + npages, 0);
		c->taken_released = hz_bits_count(c->released, i + n, i + npages);
		hz_bits_set(c->released, i + n, i + npages, 0);
		hz_bits_set(c->clean, i + n, i + npages, 0);
		hz_bits_set(c->shared, i + n, i + npages, 0);
		set_used(c, i + n, i + npages, 1);
		hz_bits_set(c->dirty, i + n, i + npages, 1);
		c->free_pages -= npages - n;
	}
	c->npages[i] = (uint32_t)npages;
	return 0;
}

void hz_chunk_mark_dirty(struct hz_chunk *c, void *p)
{
	size_t n = hz_chunk_block_pages(c, p), i = page_of(c, p);
	hz_bits_set(c->dirty, i, i + n, 1);
	hz_bits_set(c->clean, i, i + n, 0);
}

int hz_calloc_release;

/* Makes a dirty run read as zero: cleared (hinted at hint when not NULL),
 * or, with hz_calloc_release, released for the kernel to fault in zero
 * pages (not on hugetlb chunks, where part of a huge page cannot be). */
static void zero_run(const struct hz_chunk *c, size_t i, size_t j, void *hint)
{
	unsigned char *p = c->base + (i << HZ_PAGE_SHIFT);
	size_t len = (j - i) << HZ_PAGE_SHIFT;
	if (hz_calloc_release && !c->hugetlb && !hz_os_dontneed(p, len))
		return;
	if (hint)
		hz_zero_hinted_counted(p, len, hint);
	else
		hz_fill_counted(p, 0, len);
}

void hz_chunk_zero_plan(const struct hz_chunk *c, const void *p, struct hz_zero_plan *plan)
{
	size_t n = hz_chunk_block_pages(c, p), s = page_of(c, p), e = s + n, cleared = 0;
	plan->n = 0;
	plan->hinted = 0;
	if (!n) {
		plan->known_zero = 0;
		return;
	}
	/* The run holding the block's first page (the one the program
	 * touches first) goes last, by a hinted clear that clears that page
	 * last within it; the other runs first, one kernel call each. When
	 * they do not fit the plan, the last one takes everything up to the
	 * block's end (clearing zero pages too, which is only extra work). */
	size_t first_end = hz_bit(c->dirty, s) ? hz_bits_find(c->dirty, s, e, 0) : s;
	for (size_t i = hz_bits_find(c->dirty, first_end, e, 1); i < e;) {
		size_t j = hz_bits_find(c->dirty, i, e, 0);
		if (plan->n == HZ_ZERO_RUNS - 1)
			j = e;
		plan->lo[plan->n] = (uint32_t)i;
		plan->hi[plan->n++] = (uint32_t)j;
		cleared += j - i;
		i = j < e ? hz_bits_find(c->dirty, j, e, 1) : e;
	}
	if (first_end > s) {
		plan->lo[plan->n] = (uint32_t)s;
		plan->hi[plan->n++] = (uint32_t)first_end;
		plan->hinted = 1;
		cleared += first_end - s;
	}
	plan->known_zero = (n - cleared) << HZ_PAGE_SHIFT;
}

void hz_chunk_zero_runs(const struct hz_chunk *c, const struct hz_zero_plan *plan, void *p)
{
	for (unsigned k = 0; k < plan->n; k++)
		zero_run(c, plan->lo[k], plan->hi[k], plan->hinted && k == plan->n - 1 ? p : NULL);
}

size_t hz_chunk_calloc_clear(struct hz_chunk *c, void *p)
{
	struct hz_zero_plan plan;
	hz_chunk_zero_plan(c, p, &plan);
	hz_chunk_zero_runs(c, &plan, p);
	for (unsigned k = 0; k < plan.n; k++)
		hz_bits_set(c->dirty, plan.lo[k], plan.hi[k], 0);
	return plan.known_zero;
}

int hz_chunk_any_in_memory(const struct hz_chunk *c, size_t lo, size_t hi)
{
	return hz_bits_find(c->dirty, lo, hi, 1) != hi || hz_bits_find(c->clean, lo, hi, 1) != hi;
}

size_t hz_chunk_count_free(const struct hz_chunk *c, const uint64_t *state)
{
	size_t k = 0;
	for (size_t w = 0; w < HZ_CHUNK_WORDS; w++)
		k += hz_popcount64(state[w] & ~c->used[w]);
	return k;
}

/* Whether page i is free and in the state hz_chunk_next_run wants. */
static int wanted(const struct hz_chunk *c, int want_dirty, size_t i)
{
	if (hz_bit(c->used, i))
		return 0;
	return want_dirty ? hz_bit(c->dirty, i) && !hz_bit(c->shared, i) : !hz_bit(c->dirty, i) && !hz_bit(c->clean, i);
}

int hz_chunk_next_run(const struct hz_chunk *c, int want_dirty, size_t from, size_t *lo, size_t *hi)
{
	for (size_t w = from >> 6; w < HZ_CHUNK_WORDS; w++) {
		uint64_t m = ~c->used[w] & (want_dirty ? c->dirty[w] & ~c->shared[w] : ~(c->dirty[w] | c->clean[w]));
		if (w == from >> 6)
			m &= ~0ull << (from & 63);
		if (!m)
			continue;
		size_t i = (w << 6) + (size_t)__builtin_ctzll(m);
		size_t end = (i | (HZ_HUGE_PAGES - 1)) + 1, j = i + 1;
		while (j < end && wanted(c, want_dirty, j))
			j++;
		*lo = i;
		*hi = j;
		return 0;
	}
	return -1;
}

void hz_chunk_set_shared(struct hz_chunk *c, size_t lo, size_t hi)
{
	hz_bits_set(c->shared, lo, hi, 1);
}

void hz_chunk_set_clean(struct hz_chunk *c, size_t lo, size_t hi, int populated)
{
	c->dirty_free -= hz_bits_count(c->dirty, lo, hi);
	hz_bits_set(c->dirty, lo, hi, 0);
	c->clean_free += (hi - lo) - hz_bits_count(c->clean, lo, hi);
	hz_bits_set(c->clean, lo, hi, 1);
	hz_bits_set(c->released, lo, hi, 0); /* in memory again: the zeroer faulted them */
	hz_bits_set(c->populated, lo, hi, populated);
}

void hz_chunk_set_fresh(struct hz_chunk *c, size_t lo, size_t hi)
{
	c->dirty_free -= hz_bits_count(c->dirty, lo, hi);
	c->clean_free -= hz_bits_count(c->clean, lo, hi);
	hz_bits_set(c->dirty, lo, hi, 0);
	hz_bits_set(c->clean, lo, hi, 0);
	hz_bits_set(c->populated, lo, hi, 0);
	hz_bits_set(c->shared, lo, hi, 0);
}

/* ---- purge: whole free 2 MiB blocks released in batches ---- */

void hz_purge_begin(struct hz_purge *g)
{
	g->n = 0;
	g->bytes = 0;
	g->total = (struct hz_purge_result){0};
}

size_t hz_purge_flush(struct hz_purge *g)
{
	if (!g->n)
		return g->bytes;
	struct hz_release_result res;
	hz_os_release_batch(g->r, g->n, &res);
	g->total.batch.ranges += res.ranges;
	g->total.batch.bytes += res.bytes;
	g->total.batch.syscalls += res.syscalls;
	g->total.batch.fallbacks |= res.fallbacks;
	if (res.error) {
		/* Which range failed is unknown: keep them all dirty. */
		if (!g->total.batch.error)
			g->total.batch.error = res.error;
	} else {
		for (size_t k = 0; k < g->n; k++) {
			struct hz_chunk *c = g->c[k];
			size_t lo = g->lo[k], hi = g->hi[k];
			c->dirty_free -= hz_bits_count(c->dirty, lo, hi);
			size_t clean = hz_bits_count(c->clean, lo, hi);
			c->clean_free -= clean;
			g->total.clean_bytes += clean << HZ_PAGE_SHIFT;
			g->total.populated_bytes += hz_bits_count(c->populated, lo, hi) << HZ_PAGE_SHIFT;
			hz_bits_set(c->populated, lo, hi, 0);
			/* Released: the pages that were in memory (a fresh
			 * page taken later costs its fault either way). */
			hz_bits_or(c->released, c->dirty, c->clean, lo, hi);
			hz_bits_set(c->dirty, lo, hi, 0);
			hz_bits_set(c->clean, lo, hi, 0);
			hz_bits_set(c->shared, lo, hi, 0);
		}
		g->bytes += res.bytes;
	}
	g->n = 0;
	return g->bytes;
}

/* Adds c's pages [i, j), merged with the previous range when it is the
 * same chunk's and adjacent on either side. */
static void purge_add(struct hz_purge *g, struct hz_chunk *c, size_t i, size_t j)
{
	size_t k = g->n - 1;
	if (g->n && g->c[k] == c && (g->hi[k] == i || g->lo[k] == j)) {
		g->lo[k] = g->lo[k] < i ? g->lo[k] : (uint32_t)i;
		g->hi[k] = g->hi[k] > j ? g->hi[k] : (uint32_t)j;
		g->r[k] = (struct hz_range){c->base + ((size_t)g->lo[k] << HZ_PAGE_SHIFT),
					    (size_t)(g->hi[k] - g->lo[k]) << HZ_PAGE_SHIFT};
		return;
	}
	if (g->n == HZ_PURGE_RANGES)
		hz_purge_flush(g);
	g->c[g->n] = c;
	g->lo[g->n] = (uint32_t)i;
	g->hi[g->n] = (uint32_t)j;
	g->r[g->n] = (struct hz_range){c->base + (i << HZ_PAGE_SHIFT), (j - i) << HZ_PAGE_SHIFT};
	g->n++;
}

/* hz_purge_gather's over the huge pages from page `from` (a huge page's
 * first) up to `to`. */
static size_t gather_in(struct hz_purge *g, struct hz_chunk *c, int partial, size_t most, size_t from,
			size_t to)
{
	size_t gathered = 0;
	/* From the top: first fit takes the lowest free pages, so the highest
	 * are the last a block would take again. */
	for (size_t h = to; h > from && gathered < most;) {
		h -= HZ_HUGE_PAGES;
		size_t e = h + HZ_HUGE_PAGES;
		if (hz_bits_find(c->dirty, h, e, 1) == e && hz_bits_find(c->clean, h, e, 1) == e)
			continue; /* nothing in memory to release here */
		if (c->busy_lo < e && h < c->busy_hi)
			continue; /* the zeroer's: not now */
		if (hz_bits_find(c->used, h, e, 1) == e) {
			purge_add(g, c, h, e); /* a whole free huge page */
			gathered += HZ_HUGE_SIZE;
			continue;
		}
		if (!partial || c->hugetlb)
			continue; /* never split a huge page in use (hugetlb: cannot) */
		for (size_t i = hz_bits_find(c->used, h, e, 0); i < e;) {
			size_t j = hz_bits_find(c->used, i, e, 1);
			if (hz_bits_find(c->dirty, i, j, 1) < j || hz_bits_find(c->clean, i, j, 1) < j) {
				purge_add(g, c, i, j);
				gathered += (j - i) << HZ_PAGE_SHIFT;
			}
			i = hz_bits_find(c->used, j, e, 0);
		}
	}
	return gathered;
}

size_t hz_purge_gather(struct hz_purge *g, struct hz_chunk *c, int partial, size_t most)
{
	return gather_in(g, c, partial, most, 0, HZ_CHUNK_PAGES);
}

size_t hz_purge_gather_span(struct hz_purge *g, struct hz_chunk *c, size_t lo, size_t hi)
{
	size_t from = hz_round_up(lo, HZ_HUGE_PAGES), to = hi / HZ_HUGE_PAGES * HZ_HUGE_PAGES;
	return to > from ? gather_in(g, c, 0, SIZE_MAX, from, to) : 0;
}

size_t hz_purge_chunk(struct hz_chunk *c, int partial, size_t most, struct hz_purge_result *res)
{
	struct hz_purge g; /* 5 KiB */
	hz_purge_begin(&g);
	hz_purge_gather(&g, c, partial, most);
	size_t bytes = hz_purge_flush(&g);
	if (res)
		*res = g.total;
	return bytes;
}
