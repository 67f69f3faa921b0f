/* Page runs and per-page zero state of one hugepage chunk (chunk.h). */
#include <errno.h>

#include "../obs/counters.h"
#include "chunk.h"
#include "fresh.h"
#include "registry.h"

/* ---- bitmaps over HZ_CHUNK_PAGES bits ---- */

static int bit(const uint64_t *b, size_t i)
{
	return (int)((b[i >> 6] >> (i & 63)) & 1);
}

/* Sets (v = 1) or clears bits [i, j). */
static void set_range(uint64_t *b, size_t i, size_t j, int v)
{
	while (i < j) {
		size_t w = i >> 6, lo = i & 63;
		size_t hi = (j - (i & ~(size_t)63)) < 64 ? j & 63 : 64;
		uint64_t m = (hi == 64 ? ~0ull : ((1ull << hi) - 1)) & ~((1ull << lo) - 1);
		b[w] = v ? b[w] | m : b[w] & ~m;
		i = (w + 1) << 6;
	}
}

/* The number of bits set in [i, j). */
static size_t count_range(const uint64_t *b, size_t i, size_t j)
{
	size_t k = 0;
	while (i < j) {
		size_t w = i >> 6, lo = i & 63;
		size_t hi = (j - (i & ~(size_t)63)) < 64 ? j & 63 : 64;
		uint64_t m = (hi == 64 ? ~0ull : ((1ull << hi) - 1)) & ~((1ull << lo) - 1);
		k += (size_t)__builtin_popcountll(b[w] & m);
		i = (w + 1) << 6;
	}
	return k;
}

/* The first index in [i, limit) whose bit is want, or limit. */
static size_t next_bit(const uint64_t *b, size_t i, size_t limit, int want)
{
	while (i < limit) {
		uint64_t w = want ? b[i >> 6] : ~b[i >> 6];
		w &= ~0ull << (i & 63);
		if (w) {
			size_t k = (i & ~(size_t)63) + (size_t)__builtin_ctzll(w);
			return k < limit ? k : limit;
		}
		i = (i | 63) + 1;
	}
	return limit;
}

static size_t page_of(const struct hz_chunk *c, const void *p)
{
	return (size_t)((const unsigned char *)p - c->base) >> HZ_PAGE_SHIFT;
}

/* ---- chunk ---- */

int hz_chunk_init(struct hz_chunk *c, int hugetlb)
{
	hz_fill_policy(c, 0, sizeof *c);
	if (hz_page_size != HZ_PAGE)
		return ENOMEM; /* another page size: chunks do not apply */
	void *base;
	if (hugetlb && !hz_reg_map(HZ_CHUNK_SIZE, 1, &base)) {
		c->hugetlb = 1;
	} else {
		if (hz_reg_map(HZ_CHUNK_SIZE, 0, &base))
			return ENOMEM;
		/* THP may be unavailable (disabled for the process, or not
		 * built in): the chunk then works on small pages. */
		if (hz_thp)
			hz_fresh_advise(base, HZ_CHUNK_SIZE);
	}
	c->base = base;
	c->free_pages = HZ_CHUNK_PAGES;
	return 0;
}

void hz_chunk_destroy(struct hz_chunk *c)
{
	hz_os_unmap(c->base, HZ_CHUNK_SIZE);
	c->base = NULL;
}

/* Pages [i, i + npages), free, handed out. */
static void *take(struct hz_chunk *c, size_t i, size_t npages)
{
	size_t dirty = count_range(c->dirty, i, i + npages);
	size_t clean = count_range(c->clean, i, i + npages);
	c->dirty_free -= dirty;
	c->clean_free -= clean;
	c->taken_fresh = npages - dirty - clean;
	set_range(c->clean, i, i + npages, 0);
	set_range(c->shared, i, i + npages, 0);
	set_range(c->used, i, i + npages, 1);
	set_range(c->start, i, i + 1, 1);
	c->npages[i] = (uint32_t)npages;
	c->free_pages -= npages;
	return c->base + (i << HZ_PAGE_SHIFT);
}

void *hz_chunk_alloc_avoiding(struct hz_chunk *c, size_t npages, int avoid_busy)
{
	if (npages == 0 || npages > c->free_pages)
		return NULL;
	size_t blo = c->busy_lo, bhi = c->busy_hi;
	size_t i = next_bit(c->used, 0, HZ_CHUNK_PAGES, 0);
	while (i < HZ_CHUNK_PAGES) {
		size_t j = next_bit(c->used, i, HZ_CHUNK_PAGES, 1);
		size_t at = i;
		if (avoid_busy && at < bhi && blo < at + npages)
			at = bhi; /* past the zeroer's pages, if the run still fits */
		/* Avoiding, only pages in memory: waiting for the zeroer's step
		 * costs less than faulting fresh pages in. */
		if (j >= at && j - at >= npages &&
		    (!avoid_busy || count_range(c->dirty, at, at + npages) + count_range(c->clean, at, at + npages) == npages))
			return take(c, at, npages);
		i = next_bit(c->used, j, HZ_CHUNK_PAGES, 0);
	}
	return NULL;
}

void *hz_chunk_alloc(struct hz_chunk *c, size_t npages)
{
	return hz_chunk_alloc_avoiding(c, npages, 0);
}

size_t hz_chunk_block_pages(const struct hz_chunk *c, const void *p)
{
	const unsigned char *q = p;
	if (q < c->base || q >= c->base + HZ_CHUNK_SIZE || ((uintptr_t)q & (HZ_PAGE - 1)))
		return 0;
	size_t i = page_of(c, q);
	return bit(c->start, i) ? c->npages[i] : 0;
}

size_t hz_chunk_free(struct hz_chunk *c, void *p)
{
	size_t n = hz_chunk_block_pages(c, p);
	if (!n)
		return 0;
	size_t i = page_of(c, p);
	set_range(c->start, i, i + 1, 0);
	c->npages[i] = 0;
	set_range(c->used, i, i + n, 0);
	set_range(c->dirty, i, i + n, 1);
	c->free_pages += n;
	c->dirty_free += n;
	return n;
}

int hz_chunk_resize(struct hz_chunk *c, void *p, size_t npages)
{
	size_t n = hz_chunk_block_pages(c, p), i = page_of(c, p);
	if (!n || npages == 0)
		return -1;
	if (npages <= n) {
		set_range(c->used, i + npages, i + n, 0);
		set_range(c->dirty, i + npages, i + n, 1);
		c->free_pages += n - npages;
		c->dirty_free += n - npages;
	} else {
		if (npages > HZ_CHUNK_PAGES - i ||
		    next_bit(c->used, i + n, i + npages, 1) != i + npages)
			return -1;
		c->dirty_free -= count_range(c->dirty, i + n, i + npages);
		c->clean_free -= count_range(c->clean, i + n, i + npages);
		set_range(c->clean, i + n, i + npages, 0);
		set_range(c->shared, i + n, i + npages, 0);
		set_range(c->used, i + n, i + npages, 1);
		set_range(c->dirty, i + n, i + npages, 1);
		c->free_pages -= npages - n;
	}
	c->npages[i] = (uint32_t)npages;
	return 0;
}

void hz_chunk_mark_dirty(struct hz_chunk *c, void *p)
{
	size_t n = hz_chunk_block_pages(c, p), i = page_of(c, p);
	set_range(c->dirty, i, i + n, 1);
	set_range(c->clean, i, i + n, 0);
}

int hz_calloc_release;
int hz_thp;
uint64_t hz_thp_advised, hz_thp_refused;

void hz_thp_advise(void *p, size_t size)
{
	if (hz_os_hugepage(p, size))
		__atomic_fetch_add(&hz_thp_refused, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&hz_thp_advised, 1, __ATOMIC_RELAXED);
}

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
	size_t first_end = bit(c->dirty, s) ? next_bit(c->dirty, s, e, 0) : s;
	for (size_t i = next_bit(c->dirty, first_end, e, 1); i < e;) {
		size_t j = next_bit(c->dirty, i, e, 0);
		if (plan->n == HZ_ZERO_RUNS - 1)
			j = e;
		plan->lo[plan->n] = (uint32_t)i;
		plan->hi[plan->n++] = (uint32_t)j;
		cleared += j - i;
		i = j < e ? next_bit(c->dirty, j, e, 1) : e;
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
		set_range(c->dirty, plan.lo[k], plan.hi[k], 0);
	return plan.known_zero;
}

size_t hz_chunk_dirty_free_pages(const struct hz_chunk *c)
{
	size_t k = 0;
	for (size_t w = 0; w < HZ_CHUNK_WORDS; w++)
		k += (size_t)__builtin_popcountll(c->dirty[w] & ~c->used[w]);
	return k;
}

size_t hz_chunk_clean_free_pages(const struct hz_chunk *c)
{
	size_t k = 0;
	for (size_t w = 0; w < HZ_CHUNK_WORDS; w++)
		k += (size_t)__builtin_popcountll(c->clean[w] & ~c->used[w]);
	return k;
}

/* Whether page i is free and in the state hz_chunk_next_run wants. */
static int wanted(const struct hz_chunk *c, int want_dirty, size_t i)
{
	if (bit(c->used, i))
		return 0;
	return want_dirty ? bit(c->dirty, i) && !bit(c->shared, i) : !bit(c->dirty, i) && !bit(c->clean, i);
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
	set_range(c->shared, lo, hi, 1);
}

void hz_chunk_set_clean(struct hz_chunk *c, size_t lo, size_t hi)
{
	c->dirty_free -= count_range(c->dirty, lo, hi);
	set_range(c->dirty, lo, hi, 0);
	c->clean_free += (hi - lo) - count_range(c->clean, lo, hi);
	set_range(c->clean, lo, hi, 1);
}

/* The batch being gathered: ranges in page indices, flushed when full
 * (a chunk has 32 huge pages, so whole-block purges take one batch). */
#define GATHER 128
struct gather {
	struct hz_chunk *c;
	struct hz_range r[GATHER];
	size_t lo[GATHER], hi[GATHER];
	size_t n, bytes;
	struct hz_release_result total;
};

static void flush(struct gather *g)
{
	if (!g->n)
		return;
	struct hz_release_result res;
	hz_os_release_batch(g->r, g->n, &res);
	g->total.ranges += res.ranges;
	g->total.bytes += res.bytes;
	g->total.syscalls += res.syscalls;
	g->total.fallbacks |= res.fallbacks;
	if (res.error) {
		/* Which range failed is unknown: keep them all dirty. */
		if (!g->total.error)
			g->total.error = res.error;
	} else {
		for (size_t k = 0; k < g->n; k++) {
			g->c->dirty_free -= count_range(g->c->dirty, g->lo[k], g->hi[k]);
			g->c->clean_free -= count_range(g->c->clean, g->lo[k], g->hi[k]);
			set_range(g->c->dirty, g->lo[k], g->hi[k], 0);
			set_range(g->c->clean, g->lo[k], g->hi[k], 0);
			set_range(g->c->shared, g->lo[k], g->hi[k], 0);
		}
		g->bytes += res.bytes;
	}
	g->n = 0;
}

/* Adds pages [i, j), merged with the previous range when adjacent. */
static void add(struct gather *g, size_t i, size_t j)
{
	if (g->n && g->hi[g->n - 1] == i) {
		g->hi[g->n - 1] = j;
		g->r[g->n - 1].len = (j - g->lo[g->n - 1]) << HZ_PAGE_SHIFT;
		return;
	}
	if (g->n == GATHER)
		flush(g);
	g->lo[g->n] = i;
	g->hi[g->n] = j;
	g->r[g->n] = (struct hz_range){g->c->base + (i << HZ_PAGE_SHIFT), (j - i) << HZ_PAGE_SHIFT};
	g->n++;
}

size_t hz_chunk_purge(struct hz_chunk *c, int partial, struct hz_release_result *res)
{
	struct gather g; /* 4 KiB */
	g.c = c;
	g.n = g.bytes = 0;
	g.total = (struct hz_release_result){0};
	for (size_t h = 0; h < HZ_CHUNK_PAGES; h += HZ_HUGE_PAGES) {
		size_t e = h + HZ_HUGE_PAGES;
		if (next_bit(c->dirty, h, e, 1) == e && next_bit(c->clean, h, e, 1) == e)
			continue; /* nothing in memory to release here */
		if (c->busy_lo < e && h < c->busy_hi)
			continue; /* the zeroer's: not now */
		if (next_bit(c->used, h, e, 1) == e) {
			add(&g, h, e); /* a whole free huge page */
			continue;
		}
		if (!partial || c->hugetlb)
			continue; /* never split a huge page in use (hugetlb: cannot) */
		for (size_t i = next_bit(c->used, h, e, 0); i < e;) {
			size_t j = next_bit(c->used, i, e, 1);
			if (next_bit(c->dirty, i, j, 1) < j || next_bit(c->clean, i, j, 1) < j)
				add(&g, i, j);
			i = next_bit(c->used, j, e, 0);
		}
	}
	flush(&g);
	if (res)
		*res = g.total;
	return g.bytes;
}
