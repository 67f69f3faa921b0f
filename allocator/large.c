/* The hugepage arenas' entry (large.c). */
#include <errno.h>
#include <string.h>

#include "allocator.h"

size_t hz_block_max = HZ_HUGE_MAX;
int hz_large_pressed;
static uint64_t pressure_checks, pressure_releases, pressure_bytes, limit_read_at;
static size_t limit_fitted; /* the cgroup limit the budget and reserve were fitted to */

void hz_large_setup(const struct hz_large_cfg *cfg)
{
	hz_limits_read();
	size_t most = hz_limits_max_block(HZ_REG_WINDOW / 4);
	hz_block_max = most < HZ_HUGE_MAX ? most : HZ_HUGE_MAX;
	/* Where every mapping counts in full against a limit (overcommit
	 * mode 2's commit charge, an address-space rlimit), no chunk is
	 * reserved ahead: a 64 MiB chunk for one 1 MiB block would cost the
	 * program its largest blocks. */
	hz_huge_fitted = hz_limits.overcommit == 2 || hz_limits.as != HZ_LIMIT_NONE ||
			 hz_limits.data != HZ_LIMIT_NONE;
	hz_budget_setup(cfg->dirty_max, cfg->dirty_decay_ms, cfg->reserve);
	hz_fresh_setup(cfg->thp, cfg->fresh);
	hz_hugetlb = cfg->hugetlb;
	hz_calloc_release = cfg->calloc_release;
	hz_helpers_setup(cfg->threads);
	hz_populate_setup(cfg->populate);
	hz_zeroer_enabled = cfg->background;
	hz_budget_ticked = cfg->background;
	hz_hardened_setup(cfg->hardened);
	hz_budget_retain = !cfg->hardened; /* a write after free faults there */
	limit_fitted = hz_budget_fit();
}

/* In a memory cgroup: when its usage (less its inactive page cache) and
 * size bytes more would come within an eighth of its limit, the
 * arenas' free memory goes back
 * before the block is taken (a block may take fresh pages), and the small
 * engine is told to give its own back (hz_large_pressed). The limit is
 * read again once a second: it may be changed at run time. The usage is
 * read at every large allocation while the arenas hold free memory, and
 * at most once in SMALL_CHECK_NS otherwise (only the small engine's free
 * pages, which it cannot count cheaply, could then be given back): once a
 * tick of the coarse clock it reads (1-10 ms), which is coarser. An
 * eighth, not a sixteenth: what is charged between two checks besides
 * the block (the zeroer's reserve, up to a thirty-second of the limit,
 * page tables, the program's small blocks) must fit in it. Python's 4
 * blocks of 32 MiB beside jemalloc's 96 MiB free, in a group of 224 MiB,
 * were let through at 223 MiB of it projected and killed in 4 runs of
 * 40. */
#define SMALL_CHECK_NS ((uint64_t)1000000u)
#define MARGIN(limit) ((limit) / 8)
static HZ_NOINLINE void relieve(size_t size)
{
	static uint64_t checked_at;
	uint64_t now = hz_os_coarse_ns();
	if (now - __atomic_load_n(&limit_read_at, __ATOMIC_RELAXED) >= 1000000000u) {
		__atomic_store_n(&limit_read_at, now, __ATOMIC_RELAXED);
		hz_limits_refresh();
		if (__atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED) != limit_fitted)
			limit_fitted = hz_budget_fit();
	}
	size_t limit = __atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED);
	if (limit == HZ_LIMIT_NONE)
		return;
	if (!hz_arenas_free_bytes()) {
		if (now - __atomic_load_n(&checked_at, __ATOMIC_RELAXED) < SMALL_CHECK_NS)
			return;
		__atomic_store_n(&checked_at, now, __ATOMIC_RELAXED);
	}
	size_t usage = hz_limits_usage();
	__atomic_fetch_add(&pressure_checks, 1, __ATOMIC_RELAXED);
	if (usage == HZ_LIMIT_NONE || usage + size + MARGIN(limit) <= limit)
		return;
	/* Near the limit by the usage: without its inactive page cache, which
	 * the kernel drops first (a group that reads files sits at its limit). */
	size_t cache = hz_limits_reclaimable();
	usage = cache < usage ? usage - cache : 0;
	if (usage + size + MARGIN(limit) <= limit)
		return;
	__atomic_fetch_add(&pressure_releases, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&pressure_bytes, hz_large_trim(), __ATOMIC_RELAXED);
	__atomic_store_n(&hz_large_pressed, 1, __ATOMIC_RELAXED);
}

/* In hardened mode a block is followed by its guard: made a guard once
 * the block is handed out (after its clear), ordinary memory again before
 * its free clears it. Below a huge page the guard is a page. From a huge
 * page up the block is whole huge pages, huge-page aligned, and its guard
 * a huge page's span of its own: a guard page inside a huge page splits
 * it into small pages, which stay split once the guard is removed, and a
 * block on small pages was 4 to 10 times slower to clear and to write
 * here (docs/measurements.md). Not where every mapping counts against a
 * limit (hz_huge_fitted): there the address space is what is short. */
static size_t guard_for(size_t size)
{
	if (!hz_hardened)
		return 0;
	return hz_hardened_huge(size) ? HZ_HUGE_SIZE : HZ_PAGE;
}

/* The guard of a live block of n bytes with its guard: a block with a
 * page's guard takes at most a huge page, one with a huge page's two. */
static size_t guard_in(size_t n)
{
	if (!hz_hardened)
		return 0;
	return n > HZ_HUGE_SIZE && !hz_huge_fitted ? HZ_HUGE_SIZE : HZ_PAGE;
}

void *hz_large_alloc_aligned(size_t size, size_t align, int how)
{
	int zero = how & HZ_LARGE_ZERO;
	void *p = NULL;
	int probe = 0;
	struct hz_handout got = {0, 0, 0};
	size_t guard = guard_for(size);
	if (size > hz_block_max - 2 * guard) { /* room for the guard and the rounding */
		errno = ENOMEM;
		return NULL;
	}
	size_t body = hz_round_up(size, guard == HZ_HUGE_SIZE ? HZ_HUGE_SIZE : HZ_PAGE);
	if (guard == HZ_HUGE_SIZE && align < HZ_HUGE_SIZE)
		align = HZ_HUGE_SIZE;
	if (size)
		size = body + guard;
	/* A block of this length freed lately, whole and as it was (kept
	 * only where there is no guard: not in hardened mode). */
	if (!how && !guard && size && size <= HZ_RUN_KEEP_MAX &&
	    (p = hz_run_take_kept(size >> HZ_PAGE_SHIFT, align)))
		return p;
	if (hz_unlikely(hz_limits.cgroup_version))
		relieve(size);
	if (hz_thp) {
		hz_fresh_decide(); /* outside every lock */
		/* A measurement when due, by the zeroer's thread, off the
		 * program's (which measures only before it maps fresh memory:
		 * run.c, huge_cache.c). */
		probe = hz_zeroer_enabled && hz_unlikely(hz_fresh_probe_due(1));
	}
	got.populate = hz_populate_wanted(body); /* learnt by the block's size (populate.c) */
	if (size && size <= HZ_RUN_MAX && !hz_huge_fitted)
		p = hz_run_alloc(hz_round_up(size, HZ_PAGE) >> HZ_PAGE_SHIFT, align >> HZ_PAGE_SHIFT, zero, &got);
	/* Larger blocks, and those no chunk could be mapped for (an
	 * address-space limit): a mapping of their own. */
	if (!p && size)
		p = hz_huge_cache_alloc(size, zero, &got);
	/* Refused a mapping where every mapping counts against a limit: the
	 * free blocks the arenas keep mapped go back, and it is asked again. */
	if (!p && size && hz_huge_fitted && hz_arenas_free_bytes()) {
		__atomic_fetch_add(&pressure_releases, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&pressure_bytes, hz_large_trim(), __ATOMIC_RELAXED);
		p = hz_huge_cache_alloc(size, zero, &got);
	}
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (got.fresh) /* never its guard page: the helpers may go on after the return */
		hz_populate_block(p, body, got.fresh, got.populate, zero);
	if (guard) {
		if (got.fresh < size) /* freed pages, cleared at their free */
			hz_hardened_reused(p);
		hz_hardened_guard((unsigned char *)p + body, guard, 1);
	}
	if (size >= HZ_HELPERS_MIN) /* its clears may share the work */
		hz_helpers_start();
	if (hz_zeroer_enabled)
		hz_zeroer_kick(zero || probe, got.refill || probe); /* the reserve to refill, a probe */
	return p;
}

/* The huge block o found for p, when p is its first byte. */
static struct hz_huge *huge_at(struct hz_owner o, const void *p)
{
	return o.huge && o.huge->base == p ? o.huge : NULL;
}

/* The live block's bytes with its guard page, or 0. */
static size_t taken(struct hz_owner o, const void *p)
{
	if (o.huge)
		return huge_at(o, p) ? hz_huge_cache_usable(o.huge) : 0;
	return o.chunk ? hz_run_usable(o.chunk, p) : 0;
}

size_t hz_large_usable(struct hz_owner o, const void *p)
{
	size_t n = taken(o, p);
	return n > guard_in(n) ? n - guard_in(n) : 0;
}

/* The block at p ends or changes its life: every job of the helpers in
 * it is ended first (a fill only in a huge block: no chunk block reaches
 * HZ_HELPERS_MIN), its readings taken. */
static void jobs_end(struct hz_owner o, const void *p)
{
	hz_fresh_freed(p); /* their readings before the clear touches it */
	hz_populate_freed(p);
	if (o.huge)
		hz_helpers_end_in(o.huge->base, o.huge->mapped);
}

void hz_large_protected(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, e = a + len < a ? UINTPTR_MAX : a + len;
	uintptr_t span = __atomic_load_n(&hz_reg_span, __ATOMIC_RELAXED), lo = HZ_REG_WINDOW_LO, hi = lo + span;
	if (hi < lo) /* widened: every address may be the arenas' */
		lo = 0, hi = UINTPTR_MAX;
	if (e <= lo || a >= hi)
		return; /* outside the arenas' window: not theirs */
	a = (a > lo ? a : lo) & ~(uintptr_t)(HZ_CHUNK_SIZE - 1);
	e = e < hi ? e : hi;
	for (; a < e; a += HZ_CHUNK_SIZE) {
		uintptr_t r = hz_reg_get((const void *)a);
		if (r & HZ_REG_HUGE) {
			/* Marked, then its fills in flight ended: a memset that
			 * published one after reads the mark (helpers.c). */
			struct hz_huge *h = (struct hz_huge *)(r & ~HZ_REG_HUGE);
			__atomic_store_n(&h->program_protected, 1, __ATOMIC_SEQ_CST);
			hz_helpers_end_in(h->base, h->mapped);
		}
		if (a > UINTPTR_MAX - HZ_CHUNK_SIZE)
			break;
	}
}

/* hz_large_free's; grown: realloc moved p's bytes to a larger block. */
static int large_free(struct hz_owner o, void *p, int grown)
{
	jobs_end(o, p);
	int cleared = 0;
	size_t fresh_tail = 0; /* pages at its end not in memory: its span given back */
	if (hz_hardened) {
		size_t n = taken(o, p), guard = guard_in(n);
		if (n <= guard)
			return -1; /* not a live block */
		hz_hardened_guard((unsigned char *)p + n - guard, guard, 0);
		/* A chunk's guard span, never touched, is reused at other
		 * offsets: the page table the guard left goes too, so that the
		 * span can be a huge page again. Not a huge block's, whose
		 * span stays at its mapping's end when reused at its size:
		 * releasing a page table made the next touches of the
		 * process's memory fault again here (a 32 MiB calloc+touch
		 * 1.5x slower). */
		int released = guard == HZ_HUGE_SIZE && o.chunk &&
			       !hz_os_dontneed((unsigned char *)p + n - guard, guard);
		/* The guard reads zero once removed (zero when it was made
		 * one, and never writable since), or released; where one
		 * could not be installed, it may have been written to. */
		hz_hardened_clear(p, hz_hardened_guard_failed() && !released ? n : n - guard, 1);
		cleared = 1;
		fresh_tail = released ? guard >> HZ_PAGE_SHIFT : 0;
	}
	int r = o.huge ? (huge_at(o, p) ? hz_huge_cache_free(o.huge, cleared, grown) : -1)
		: o.chunk ? hz_run_free(o.chunk, p, cleared, fresh_tail, grown) : -1;
	if (!r && !cleared)
		hz_zeroer_kick(1, 1); /* dirty memory to clear */
	else if (r > 0)
		hz_zeroer_kick(1, 0); /* kept whole: started, for the decay's tick, not woken */
	return r > 0 ? 0 : r;
}

int hz_large_free(struct hz_owner o, void *p)
{
	return large_free(o, p, 0);
}

/* In place: a chunk block resized within its chunk, or a huge block
 * within its mapping. 0 when done. */
static int resize_in_place(struct hz_owner o, void *p, size_t old, size_t size)
{
	if (hz_hardened) /* its guard page stays where it is: a new block */
		return -1;
	if (o.chunk && size <= HZ_RUN_MAX)
		return hz_run_resize(o.chunk, p, old, size);
	if (huge_at(o, p) && size > HZ_RUN_MAX)
		return hz_huge_cache_resize(o.huge, size);
	return -1;
}

size_t hz_large_resize(struct hz_owner o, void *p, size_t size)
{
	size_t old = hz_large_usable(o, p);
	if (old && size && size <= hz_block_max && size != old) {
		jobs_end(o, p);
		resize_in_place(o, p, old, size);
	}
	return hz_large_usable(o, p);
}

void *hz_large_realloc(struct hz_owner o, void *p, size_t old, size_t size)
{
	if (size == 0 || size > hz_block_max) {
		errno = ENOMEM;
		return NULL;
	}
	jobs_end(o, p); /* a watched or tracked block is read before it changes */
	if (!resize_in_place(o, p, old, size))
		return p;
	void *q = huge_at(o, p) && size > HZ_RUN_MAX && !hz_hardened ? hz_huge_cache_move(o.huge, size) : NULL;
	if (q)
		return q;
	/* A new block, the bytes copied. */
	if (!(q = hz_large_alloc(size, 0)))
		return NULL;
	memcpy(q, p, old < size ? old : size);
	large_free(o, p, size > old);
	return q;
}

size_t hz_large_trim(void)
{
	size_t bytes = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		bytes += hz_budget_trim(a);
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
		out->calloc_bytes_known_zero += a->n.known_zero;
		out->huge_cached_bytes += a->cached;
		out->retained_bytes += a->retained_bytes;
		out->retained_taken += a->n.retained_taken;
		out->dirty_free_bytes += hz_arena_free_bytes(a);
		out->purged_bytes += a->n.purged;
		out->purges += a->n.purges;
		out->allocs += a->n.nalloc;
		out->callocs += a->n.ncalloc;
		out->calloc_bytes += a->n.calloc_bytes;
		out->frees += a->n.nfree;
		out->purge_ranges += a->n.purge_ranges;
		out->purge_syscalls += a->n.purge_syscalls;
		out->purge_fallbacks += a->n.purge_fallbacks;
		out->hugetlb_chunks += a->n.hugetlb_chunks;
		out->hugetlb_fallbacks += a->n.hugetlb_fallbacks;
		out->cleared_caller += a->n.cleared_caller;
		out->reserve_hits += a->n.reserve_hits;
		out->reserve_misses += a->n.reserve_misses;
		out->reserve_bytes += hz_arena_clean_bytes(a);
		out->reserve_unused_bytes += a->n.unused;
		out->refaulted_bytes += a->n.refaulted;
		out->refaults += a->n.refaults;
		out->kept_bytes += a->kept_bytes;
		out->kept_taken += a->n.kept_taken;
		pthread_mutex_unlock(&a->lock);
	}
	out->pressure_checks = __atomic_load_n(&pressure_checks, __ATOMIC_RELAXED);
	out->pressure_releases = __atomic_load_n(&pressure_releases, __ATOMIC_RELAXED);
	out->pressure_bytes = __atomic_load_n(&pressure_bytes, __ATOMIC_RELAXED);
	struct hz_fresh_stats f;
	hz_fresh_stats(&f);
	out->thp_advised = f.thp_advised;
	out->thp_refused = f.thp_refused;
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
	fn(arg, "large.kept_bytes", s.kept_bytes, 1);
	fn(arg, "malloc.large.kept_taken", s.kept_taken, 0);
	fn(arg, "large.retained_bytes", s.retained_bytes, 1);
	fn(arg, "malloc.large.retained_taken", s.retained_taken, 0);
	fn(arg, "large.chunks", s.chunks, 1);
	fn(arg, "purge.batches", s.purges, 0);
	fn(arg, "purge.ranges", s.purge_ranges, 0);
	fn(arg, "purge.bytes", s.purged_bytes, 0);
	fn(arg, "purge.syscalls", s.purge_syscalls, 0);
	fn(arg, "purge.fallbacks", s.purge_fallbacks, 0);
	/* What releasing cost: memory released and then asked for again,
	 * which the program faults in anew, and an estimate of those faults
	 * (one a page, one a huge page where huge ones were asked for). */
	fn(arg, "purge.refaulted_bytes", s.refaulted_bytes, 0);
	fn(arg, "purge.refaults", s.refaults, 0);
	fn(arg, "hugetlb.chunks", s.hugetlb_chunks, 0);
	fn(arg, "hugetlb.fallbacks", s.hugetlb_fallbacks, 0);
	fn(arg, "thp.advised", s.thp_advised, 0);
	fn(arg, "thp.refused", s.thp_refused, 0);
	fn(arg, "large.cleared_caller_bytes", s.cleared_caller, 0);
	fn(arg, "reserve.bytes", s.reserve_bytes, 1);
	fn(arg, "reserve.hits", s.reserve_hits, 0);
	fn(arg, "reserve.misses", s.reserve_misses, 0);
	/* What the zeroer cleared or populated that no block took before it
	 * was released: work that did not pay. */
	fn(arg, "reserve.unused_bytes", s.reserve_unused_bytes, 0);
	size_t limit = __atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED);
	fn(arg, "limits.cgroup_bytes", limit == HZ_LIMIT_NONE ? 0 : limit, 1); /* 0: none */
	fn(arg, "limits.dirty_max_bytes", __atomic_load_n(&hz_budget_dirty_max, __ATOMIC_RELAXED), 1);
	fn(arg, "limits.reserve_max_bytes", __atomic_load_n(&hz_budget_reserve_max, __ATOMIC_RELAXED), 1);
	fn(arg, "limits.largest_block_bytes", hz_block_max, 1);
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
	fn(arg, "background.not_resident_bytes", z.not_resident, 0);
	fn(arg, "background.waits", z.waits, 0);
	fn(arg, "background.cpu_time_ns", z.cpu_ns, 0);
	fn(arg, "background.wakeups", z.wakeups, 0);
	fn(arg, "background.exits", z.exits, 0);
	struct hz_fresh_stats f;
	hz_fresh_stats(&f);
	fn(arg, "fresh.probes", f.probes, 0);
	fn(arg, "fresh.samples", f.samples, 0);
	fn(arg, "fresh.switches", f.switches, 0);
	/* The last measurement's first touches, in nanoseconds. */
	fn(arg, "fresh.probe_huge_touch_ns", f.huge_ns, 1);
	fn(arg, "fresh.probe_small_touch_ns", f.small_ns, 1);
	/* The median of the recent first touches of fresh huge pages (the
	 * probe's, new mappings', blocks' and the zeroer's): held against the
	 * small pages' figure, it decides fresh.huge. */
	fn(arg, "fresh.recent_huge_touch_ns", f.recent_huge_ns, 1);
	fn(arg, "fresh.readvised", f.readvised, 0);
	/* The share of a watched fresh block's pages the program touched
	 * (the recent ones' median, in 1/1024ths): huge pages pay for that
	 * share of 512 small faults only. */
	fn(arg, "fresh.touched_per_1024", f.density, 1);
	fn(arg, "fresh.watches", f.watches, 0);
	fn(arg, "fresh.huge_mappings", f.huge_maps, 0);
	fn(arg, "fresh.small_mappings", f.small_maps, 0);
	fn(arg, "fresh.huge", (uint64_t)f.huge, 1);
	struct hz_populate_stats ps;
	hz_populate_stats(&ps);
	/* HUGEZERO_POPULATE: 0 never, 1 always, 2 auto. */
	fn(arg, "populate.mode", ps.mode < 0 ? 2 : (uint64_t)ps.mode, 1);
	fn(arg, "populate.bytes", ps.bytes, 0);
	fn(arg, "populate.blocks", ps.blocks, 0);
	/* Blocks whose caller left the rest to the helpers, ahead of the
	 * program. */
	fn(arg, "populate.early_returns", ps.early, 0);
	/* Populated and never touched by the program, estimated when the
	 * block is read from its sentinel steps (or its class's figure). */
	fn(arg, "populate.untouched_bytes", ps.untouched_bytes, 0);
	/* What the program faulted in itself of populated blocks: the
	 * sentinel steps it touched (read at the block's free). */
	fn(arg, "populate.program_faulted_bytes", ps.program_faulted_bytes, 0);
	fn(arg, "populate.samples", ps.samples, 0);
	fn(arg, "populate.explored", ps.explored, 0);
	fn(arg, "populate.pressed", ps.pressed, 0);
	fn(arg, "populate.untracked", ps.untracked, 0);
	struct hz_helpers_stats hs;
	hz_helpers_stats(&hs);
	fn(arg, "helpers.threads", hs.threads, 1);
	fn(arg, "helpers.helpers", hs.helpers, 1);
	fn(arg, "helpers.populated_bytes", hs.populated, 0);
	fn(arg, "helpers.filled_bytes", hs.filled, 0);
	fn(arg, "helpers.fills", hs.fills, 0);
	fn(arg, "helpers.starts", hs.starts, 0);
	fn(arg, "helpers.start_failures", hs.start_failures, 0);
	fn(arg, "helpers.sched_fallbacks", hs.sched_fallbacks, 0);
	/* Waits for a helper's step that raised the helpers' priority. */
	fn(arg, "helpers.raised_waits", hs.raised_waits, 0);
	/* Waits that ended at their bound, a population step in flight. */
	fn(arg, "helpers.bounded_waits", hs.bounded_waits, 0);
	/* Offers not made (no idle core), helpers that left a job (woke
	 * late, preempted in a step). */
	fn(arg, "helpers.busy", hs.busy, 0);
	fn(arg, "helpers.late", hs.late, 0);
	fn(arg, "helpers.preempted", hs.preempted, 0);
	fn(arg, "fresh.free_page_reporting", (uint64_t)f.reporting, 1);
}
