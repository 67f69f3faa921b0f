/* The zeroer's claim (claim.c). */
#include "allocator.h"

struct hz_claim hz_claim;
uint64_t hz_claim_waits;

/* hz_claim.a is read under another arena's lock than the one it is
 * written under: atomically. The rest only once it names the reader's
 * arena. */
static struct hz_arena *claim_arena(void)
{
	return __atomic_load_n(&hz_claim.a, __ATOMIC_RELAXED);
}

void hz_claim_set(struct hz_arena *a, struct hz_chunk *c, size_t lo, size_t hi, struct hz_huge *h,
		  size_t off, size_t len, int populate)
{
	hz_claim.c = c;
	hz_claim.lo = lo;
	hz_claim.hi = hi;
	hz_claim.h = h;
	hz_claim.off = off;
	hz_claim.len = len;
	hz_claim.populate = populate;
	hz_claim.taken = 0;
	hz_claim.checked = 0;
	hz_claim.zero_known = 0;
	hz_claim.out_bytes = 0;
	hz_claim.extent = c ? c->dirty_free << HZ_PAGE_SHIFT : h->mapped;
	__atomic_store_n(&hz_claim.step_at, hz_os_now_ns(), __ATOMIC_RELAXED);
	if (c)
		hz_chunk_set_busy(c, lo, hi);
	__atomic_store_n(&hz_claim.a, a, __ATOMIC_RELAXED);
}

void hz_claim_reset(void)
{
	if (hz_claim.c)
		hz_chunk_set_busy(hz_claim.c, 0, 0);
	__atomic_store_n(&hz_claim.a, NULL, __ATOMIC_RELAXED);
	hz_claim.c = NULL;
	hz_claim.h = NULL;
}

/* What became of chunk page i of the claim: 0 shared with a forked
 * process, 1 cleared, 2 not in memory and zero. */
static int page_kind(size_t i)
{
	return !hz_claim_alone(i - hz_claim.lo) ? 0 : hz_claim_out(i - hz_claim.lo) ? 2 : 1;
}

/* The chunk pages of the claim: cleared ones clean, the ones not in
 * memory fresh, the ones shared with a forked process marked so. */
static void publish_pages(void)
{
	for (size_t i = hz_claim.lo; i < hz_claim.hi;) {
		int kind = page_kind(i);
		size_t j = i + 1;
		while (j < hz_claim.hi && page_kind(j) == kind)
			j++;
		if (kind == 1)
			hz_chunk_set_clean(hz_claim.c, i, j, hz_claim.populate);
		else if (kind == 2)
			hz_chunk_set_fresh(hz_claim.c, i, j);
		else
			hz_chunk_set_shared(hz_claim.c, i, j);
		i = j;
	}
}

enum hz_claim_end hz_claim_end(size_t done)
{
	enum hz_claim_end r = HZ_CLAIM_PUBLISHED;
	if (__atomic_load_n(&hz_claim.taken, __ATOMIC_RELAXED)) {
		r = HZ_CLAIM_ABANDONED;
	} else if (hz_claim.c) {
		publish_pages();
	} else if (done < hz_claim.len) { /* shared with a forked process */
		hz_claim.h->shared = 1;
		r = HZ_CLAIM_SHARED;
	} else {
		struct hz_huge *h = hz_claim.h;
		h->cleared = hz_claim.off + hz_claim.len;
		if (h->cleared >= h->mapped) {
			h->dirty = 0;
			h->cleared = 0;
		}
	}
	hz_claim_reset();
	return r;
}

int hz_claim_overlaps(const struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		      const struct hz_huge *h)
{
	if (claim_arena() != a)
		return 0;
	return c ? hz_claim.c == c && lo < hz_claim.hi && hz_claim.lo < hi : hz_claim.h == h;
}

int hz_claim_collide(const struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		     const struct hz_huge *h)
{
	if (hz_likely(!hz_claim_overlaps(a, c, lo, hi, h)))
		return 0;
	__atomic_store_n(&hz_claim.taken, 1, __ATOMIC_RELAXED);
	if (hz_claim.populate)
		return 0; /* populating changes no byte: nothing to wait for */
	__atomic_fetch_add(&hz_claim_waits, 1, __ATOMIC_RELAXED);
	return 1;
}

int hz_claim_busy(const struct hz_arena *a)
{
	if (claim_arena() != a)
		return 0;
	__atomic_store_n(&hz_claim.taken, 1, __ATOMIC_RELAXED);
	return 1;
}

int hz_claim_holds(const struct hz_arena *a, const struct hz_huge *h)
{
	return claim_arena() == a && hz_claim.h == h;
}
