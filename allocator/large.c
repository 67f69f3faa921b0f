/* The hugepage arenas' entry (large.h): each call goes to the blocks in
 * chunks (arena.c) or to the huge blocks (huge.c). */
#include <errno.h>
#include <string.h>

#include "background.h"
#include "large.h"
#include "limits.h"

size_t hz_large_max = HZ_HUGE_MAX;
/* As configured, before a cgroup's limit bounds them. */
static size_t dirty_max_cfg, reserve_cfg;
static uint64_t pressure_checks, pressure_releases, pressure_bytes, limit_read_at;
static size_t limit_fitted; /* the cgroup limit the budget and reserve were fitted to */

/* Where every mapping is charged in full (overcommit mode 2), what the
 * arenas keep free at most. */
#define FITTED_DIRTY_MAX ((size_t)16 << 20)

/* The dirty budget and the reserve within the cgroup's limit as it is. */
static void fit_limit(void)
{
	size_t limit = __atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED);
	limit_fitted = limit;
	size_t dirty = dirty_max_cfg, reserve = reserve_cfg;
	if (hz_huge_fitted) {
		dirty = dirty < FITTED_DIRTY_MAX ? dirty : FITTED_DIRTY_MAX;
		reserve = 0;
	}
	if (limit != HZ_LIMIT_NONE) {
		dirty = dirty < limit / 8 ? dirty : limit / 8;
		reserve = reserve < limit / 32 ? reserve : limit / 32;
	}
	__atomic_store_n(&hz_dirty_max, dirty, __ATOMIC_RELAXED);
	__atomic_store_n(&hz_zeroer_reserve, reserve, __ATOMIC_RELAXED);
}

void hz_large_setup(const struct hz_large_cfg *cfg)
{
	hz_limits_read();
	size_t most = hz_limits_max_block(HZ_REG_WINDOW / 4);
	hz_large_max = most < HZ_HUGE_MAX ? most : HZ_HUGE_MAX;
	hz_huge_fitted = hz_limits.overcommit == 2;
	dirty_max_cfg = cfg->dirty_max;
	reserve_cfg = cfg->reserve;
	hz_dirty_decay_ns = cfg->dirty_decay_ms * 1000000u;
	hz_thp = cfg->thp;
	hz_fresh_setup(cfg->fresh);
	hz_hugetlb = cfg->hugetlb;
	hz_calloc_release = cfg->calloc_release;
	hz_zeroer_enabled = cfg->background;
	fit_limit();
}

/* The free memory every arena holds in memory (dirty, clean, cached). */
static size_t held(void)
{
	size_t bytes = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		bytes += hz_arena_dirty(a);
		pthread_mutex_unlock(&a->lock);
	}
	return bytes;
}

/* In a memory cgroup: when its usage and size bytes more would come
 * within a sixteenth of its limit, the arenas' free memory goes back
 * before the block is taken (a block may take fresh pages). The limit is
 * read again once a second: it may be changed at run time. */
static HZ_NOINLINE void relieve(size_t size)
{
	uint64_t now = hz_os_now_ns();
	if (now - __atomic_load_n(&limit_read_at, __ATOMIC_RELAXED) >= 1000000000u) {
		__atomic_store_n(&limit_read_at, now, __ATOMIC_RELAXED);
		hz_limits_refresh();
		if (__atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED) != limit_fitted)
			fit_limit();
	}
	size_t limit = __atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED);
	if (limit == HZ_LIMIT_NONE || !held())
		return;
	size_t usage = hz_limits_usage();
	__atomic_fetch_add(&pressure_checks, 1, __ATOMIC_RELAXED);
	if (usage == HZ_LIMIT_NONE || usage + size + limit / 16 <= limit)
		return;
	__atomic_fetch_add(&pressure_releases, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&pressure_bytes, hz_large_trim(), __ATOMIC_RELAXED);
}

void *hz_large_alloc(size_t size, int zero)
{
	void *p = NULL;
	if (size > hz_large_max) {
		errno = ENOMEM;
		return NULL;
	}
	if (hz_unlikely(hz_limits.cgroup_version))
		relieve(size);
	if (hz_thp)
		hz_fresh_decide(); /* a measurement when due, outside every lock */
	if (size && size <= HZ_LARGE_MAX && !hz_huge_fitted)
		p = hz_arena_alloc(hz_round_up(size, HZ_PAGE) >> HZ_PAGE_SHIFT, zero);
	/* Larger blocks, and those no chunk could be mapped for (an
	 * address-space limit): a mapping of their own. */
	if (!p && size)
		p = hz_huge_alloc(size, zero);
	if (!p) {
		errno = ENOMEM;
	} else if (hz_zeroer_enabled) {
		hz_zeroer_kick(zero, hz_zeroer_want); /* the reserve to refill */
		hz_zeroer_want = 0;
	}
	return p;
}

size_t hz_large_usable(const void *p)
{
	struct hz_huge *h = hz_huge_at(p);
	if (h)
		return hz_huge_usable(h);
	struct hz_chunk *c = hz_reg_chunk(p);
	return c ? hz_arena_usable(c, p) : 0;
}

int hz_large_free(void *p)
{
	struct hz_huge *h = hz_huge_at(p);
	struct hz_chunk *c = h ? NULL : hz_reg_chunk(p);
	int r = h ? hz_huge_free(h) : c ? hz_arena_free(c, p) : -1;
	if (!r)
		hz_zeroer_kick(1, 1); /* dirty memory to clear */
	return r;
}

/* In place: a chunk block resized within its chunk, or a huge block
 * within its mapping. 0 when done. */
static int resize_in_place(void *p, size_t old, size_t size)
{
	struct hz_chunk *c = hz_reg_chunk(p);
	if (c && size <= HZ_LARGE_MAX)
		return hz_arena_resize(c, p, old, size);
	struct hz_huge *h = hz_huge_at(p);
	if (h && size > HZ_LARGE_MAX)
		return hz_huge_resize(h, size);
	return -1;
}

size_t hz_large_resize(void *p, size_t size)
{
	size_t old = hz_large_usable(p);
	if (old && size && size <= hz_large_max && size != old)
		resize_in_place(p, old, size);
	return hz_large_usable(p);
}

void *hz_large_realloc(void *p, size_t size)
{
	size_t old = hz_large_usable(p);
	if (!old) {
		errno = EINVAL;
		return NULL;
	}
	if (size == 0 || size > hz_large_max) {
		errno = ENOMEM;
		return NULL;
	}
	if (!resize_in_place(p, old, size))
		return p;
	struct hz_huge *h = hz_huge_at(p);
	void *q = h && size > HZ_LARGE_MAX ? hz_huge_move(h, size) : NULL;
	if (q)
		return q;
	/* A new block, the bytes copied. */
	if (!(q = hz_large_alloc(size, 0)))
		return NULL;
	memcpy(q, p, old < size ? old : size);
	hz_large_free(p);
	return q;
}

size_t hz_large_trim(void)
{
	size_t bytes = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		bytes += hz_arena_trim(a);
		pthread_mutex_unlock(&a->lock);
	}
	return bytes;
}

void hz_large_stats(struct hz_large_stats *out)
{
	*out = (struct hz_large_stats){0};
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		out->chunks += a->nchunks;
		out->allocated_bytes += a->allocated;
		out->calloc_bytes_known_zero += a->known_zero;
		out->huge_cached_bytes += a->cached;
		out->dirty_free_bytes += hz_arena_dirty(a);
		out->purged_bytes += a->purged;
		out->purges += a->purges;
		out->allocs += a->nalloc;
		out->callocs += a->ncalloc;
		out->calloc_bytes += a->calloc_bytes;
		out->frees += a->nfree;
		out->purge_ranges += a->purge_ranges;
		out->purge_syscalls += a->purge_syscalls;
		out->purge_fallbacks += a->purge_fallbacks;
		out->hugetlb_chunks += a->hugetlb_chunks;
		out->hugetlb_fallbacks += a->hugetlb_fallbacks;
		out->cleared_caller += a->cleared_caller;
		out->reserve_hits += a->reserve_hits;
		out->reserve_misses += a->reserve_misses;
		for (unsigned k = 0; k < a->nchunks; k++)
			out->reserve_bytes += a->chunks[k]->clean_free << HZ_PAGE_SHIFT;
		pthread_mutex_unlock(&a->lock);
	}
	out->pressure_checks = __atomic_load_n(&pressure_checks, __ATOMIC_RELAXED);
	out->pressure_releases = __atomic_load_n(&pressure_releases, __ATOMIC_RELAXED);
	out->pressure_bytes = __atomic_load_n(&pressure_bytes, __ATOMIC_RELAXED);
	out->thp_advised = __atomic_load_n(&hz_thp_advised, __ATOMIC_RELAXED);
	out->thp_refused = __atomic_load_n(&hz_thp_refused, __ATOMIC_RELAXED);
}

void hz_large_counters(hz_counter_fn fn, void *arg)
{
	struct hz_large_stats s;
	hz_large_stats(&s);
	fn(arg, "malloc.large.calls", s.allocs, 0);
	fn(arg, "malloc.large.frees", s.frees, 0);
	fn(arg, "calloc.large.calls", s.callocs, 0);
	fn(arg, "calloc.large.bytes", s.calloc_bytes, 0);
	fn(arg, "calloc.large.known_zero_bytes", s.calloc_bytes_known_zero, 0);
	fn(arg, "large.allocated_bytes", s.allocated_bytes, 1);
	fn(arg, "large.dirty_free_bytes", s.dirty_free_bytes, 1);
	fn(arg, "large.huge_cached_bytes", s.huge_cached_bytes, 1);
	fn(arg, "large.chunks", s.chunks, 1);
	fn(arg, "purge.batches", s.purges, 0);
	fn(arg, "purge.ranges", s.purge_ranges, 0);
	fn(arg, "purge.bytes", s.purged_bytes, 0);
	fn(arg, "purge.syscalls", s.purge_syscalls, 0);
	fn(arg, "purge.fallbacks", s.purge_fallbacks, 0);
	fn(arg, "hugetlb.chunks", s.hugetlb_chunks, 0);
	fn(arg, "hugetlb.fallbacks", s.hugetlb_fallbacks, 0);
	fn(arg, "thp.advised", s.thp_advised, 0);
	fn(arg, "thp.refused", s.thp_refused, 0);
	fn(arg, "large.cleared_caller_bytes", s.cleared_caller, 0);
	fn(arg, "reserve.bytes", s.reserve_bytes, 1);
	fn(arg, "reserve.hits", s.reserve_hits, 0);
	fn(arg, "reserve.misses", s.reserve_misses, 0);
	size_t limit = __atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED);
	fn(arg, "limits.cgroup_bytes", limit == HZ_LIMIT_NONE ? 0 : limit, 1); /* 0: none */
	fn(arg, "limits.dirty_max_bytes", __atomic_load_n(&hz_dirty_max, __ATOMIC_RELAXED), 1);
	fn(arg, "limits.reserve_max_bytes", __atomic_load_n(&hz_zeroer_reserve, __ATOMIC_RELAXED), 1);
	fn(arg, "limits.largest_block_bytes", hz_large_max, 1);
	fn(arg, "limits.pressure_checks", s.pressure_checks, 0);
	fn(arg, "limits.pressure_releases", s.pressure_releases, 0);
	fn(arg, "limits.pressure_bytes", s.pressure_bytes, 0);
	struct hz_zeroer_stats z;
	hz_zeroer_stats(&z);
	fn(arg, "background.running", (uint64_t)z.running, 1);
	/* 2: SCHED_IDLE, 1: nice 19, 0: normal (see background.sched_fallbacks). */
	fn(arg, "background.sched", (uint64_t)z.sched, 1);
	fn(arg, "background.starts", z.starts, 0);
	fn(arg, "background.start_failures", z.start_failures, 0);
	fn(arg, "background.sched_fallbacks", z.sched_fallbacks, 0);
	fn(arg, "background.cleared_bytes", z.cleared, 0);
	fn(arg, "background.populated_bytes", z.populated, 0);
	fn(arg, "background.abandoned_bytes", z.abandoned, 0);
	fn(arg, "background.waits", z.waits, 0);
	fn(arg, "background.cpu_time", z.cpu_ns, 0); /* ns */
	fn(arg, "background.wakeups", z.wakeups, 0);
	fn(arg, "background.exits", z.exits, 0);
	struct hz_fresh_stats f;
	hz_fresh_stats(&f);
	fn(arg, "fresh.probes", f.probes, 0);
	fn(arg, "fresh.samples", f.samples, 0);
	fn(arg, "fresh.switches", f.switches, 0);
	/* The last measurement's first touches, in nanoseconds. */
	fn(arg, "fresh.probe_huge_touch", f.huge_ns, 1);
	fn(arg, "fresh.probe_small_touch", f.small_ns, 1);
	fn(arg, "fresh.huge_mappings", f.huge_maps, 0);
	fn(arg, "fresh.small_mappings", f.small_maps, 0);
	fn(arg, "fresh.huge", (uint64_t)f.huge, 1);
	fn(arg, "fresh.free_page_reporting", (uint64_t)f.reporting, 1);
}
