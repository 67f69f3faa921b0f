/* Whole free 2 MiB blocks of a chunk released in batches (purge.h). */
#include "bitmap.h"
#include "purge.h"

/* The batch being gathered: ranges in page indices, flushed when full
 * (a chunk has 32 huge pages, so whole-block purges take one batch). */
#define GATHER 128
struct gather {
	struct hz_chunk *c;
	struct hz_range r[GATHER];
	size_t lo[GATHER], hi[GATHER];
	size_t n, bytes;
	struct hz_purge_result total;
};

static void flush(struct gather *g)
{
	if (!g->n)
		return;
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
			g->c->dirty_free -= hz_bits_count(g->c->dirty, g->lo[k], g->hi[k]);
			size_t clean = hz_bits_count(g->c->clean, g->lo[k], g->hi[k]);
			g->c->clean_free -= clean;
			g->total.clean_bytes += clean << HZ_PAGE_SHIFT;
			g->total.populated_bytes += hz_bits_count(g->c->populated, g->lo[k], g->hi[k]) << HZ_PAGE_SHIFT;
			hz_bits_set(g->c->populated, g->lo[k], g->hi[k], 0);
			/* Released: the pages that were in memory (a fresh
			 * page taken later costs its fault either way). */
			hz_bits_or(g->c->released, g->c->dirty, g->c->clean, g->lo[k], g->hi[k]);
			hz_bits_set(g->c->dirty, g->lo[k], g->hi[k], 0);
			hz_bits_set(g->c->clean, g->lo[k], g->hi[k], 0);
			hz_bits_set(g->c->shared, g->lo[k], g->hi[k], 0);
		}
		g->bytes += res.bytes;
	}
	g->n = 0;
}

/* Adds pages [i, j), merged with the previous range when adjacent on
 * either side. */
static void add(struct gather *g, size_t i, size_t j)
{
	size_t k = g->n - 1;
	if (g->n && (g->hi[k] == i || g->lo[k] == j)) {
		g->lo[k] = g->lo[k] < i ? g->lo[k] : i;
		g->hi[k] = g->hi[k] > j ? g->hi[k] : j;
		g->r[k] = (struct hz_range){g->c->base + (g->lo[k] << HZ_PAGE_SHIFT), (g->hi[k] - g->lo[k]) << HZ_PAGE_SHIFT};
		return;
	}
	if (g->n == GATHER)
		flush(g);
	g->lo[g->n] = i;
	g->hi[g->n] = j;
	g->r[g->n] = (struct hz_range){g->c->base + (i << HZ_PAGE_SHIFT), (j - i) << HZ_PAGE_SHIFT};
	g->n++;
}

size_t hz_purge_chunk(struct hz_chunk *c, int partial, size_t most, struct hz_purge_result *res)
{
	struct gather g; /* 4 KiB */
	g.c = c;
	g.n = g.bytes = 0;
	g.total = (struct hz_purge_result){0};
	size_t gathered = 0;
	/* From the top: first fit takes the lowest free pages, so the highest
	 * are the last a block would take again. */
	for (size_t h = HZ_CHUNK_PAGES; h > 0 && gathered < most;) {
		h -= HZ_HUGE_PAGES;
		size_t e = h + HZ_HUGE_PAGES;
		if (hz_bits_find(c->dirty, h, e, 1) == e && hz_bits_find(c->clean, h, e, 1) == e)
			continue; /* nothing in memory to release here */
		if (c->busy_lo < e && h < c->busy_hi)
			continue; /* the zeroer's: not now */
		if (hz_bits_find(c->used, h, e, 1) == e) {
			add(&g, h, e); /* a whole free huge page */
			gathered += HZ_HUGE_SIZE;
			continue;
		}
		if (!partial || c->hugetlb)
			continue; /* never split a huge page in use (hugetlb: cannot) */
		for (size_t i = hz_bits_find(c->used, h, e, 0); i < e;) {
			size_t j = hz_bits_find(c->used, i, e, 1);
			if (hz_bits_find(c->dirty, i, j, 1) < j || hz_bits_find(c->clean, i, j, 1) < j)
				add(&g, i, j);
			i = hz_bits_find(c->used, j, e, 0);
		}
	}
	flush(&g);
	if (res)
		*res = g.total;
	return g.bytes;
}
