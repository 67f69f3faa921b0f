/* Blocks in chunks (run.c). */
#include "allocator.h"

/* Where alloc_in looks: pages in memory only, in an arena whose lock is
 * free at once (another thread's: never waiting on a lock a SCHED_IDLE
 * zeroer may hold while the machine is busy); any free pages; any, a new
 * chunk mapped when none has room. */
enum where { IN_MEMORY_IF_FREE, ANY, GROW };

/* Pages the arenas had released, taken again by the last allocation or
 * growth (c->taken_released): the faults a release cost (one a page, one
 * a huge page where huge ones are asked for). */
static void count_refaults(struct hz_arena *a, const struct hz_chunk *c)
{
	if (!c->taken_released)
		return;
	a->n.refaulted += c->taken_released << HZ_PAGE_SHIFT;
	a->n.refaults += c->advice == HZ_ADVISED_HUGE ? (c->taken_released + HZ_HUGE_PAGES - 1) / HZ_HUGE_PAGES
						      : c->taken_released;
}

/* A run of npages in a's chunks that `mode` allows (chunk.c), first fit
 * (lock held); NULL when none. */
static void *fit_mode(struct hz_arena *a, size_t npages, size_t align, int mode, struct hz_chunk **cp)
{
	for (unsigned i = 0; i < a->nchunks; i++) {
		void *p;
		struct hz_chunk *c = a->chunks[i];
		if (c->free_pages >= npages && (p = hz_chunk_alloc_avoiding(c, npages, align, mode))) {
			*cp = c;
			return p;
		}
	}
	return NULL;
}

/* A run of npages in a's chunks (lock held); NULL when none. In memory and
 * away from the zeroer's piece first, so that no thread waits for it
 * (claim.c): with w IN_MEMORY_IF_FREE, only such a run. Then, where the
 * zeroer has stalled, fresh pages away from its piece; then any run (a
 * handout of its piece waits for its step), unless wait is 0. */
static void *fit(struct hz_arena *a, size_t npages, size_t align, enum where w, int wait,
		 struct hz_chunk **cp)
{
	void *p = fit_mode(a, npages, align, HZ_FIT_IN_MEMORY, cp);
	if (p || w == IN_MEMORY_IF_FREE)
		return p;
	if (hz_claim_stalled(a) && (p = fit_mode(a, npages, align, HZ_FIT_AWAY, cp)))
		return p;
	return wait ? fit_mode(a, npages, align, HZ_FIT_ANY, cp) : NULL;
}

/* A run of npages in a, its first page a multiple of align pages, looked
 * for as w says; NULL when none. */
static void *alloc_in(struct hz_arena *a, size_t npages, size_t align, int zero, enum where w, struct hz_handout *out)
{
	struct hz_chunk *c = NULL;
	if (w != IN_MEMORY_IF_FREE)
		pthread_mutex_lock(&a->lock);
	else if (pthread_mutex_trylock(&a->lock))
		return NULL;
	/* A stalled zeroer is not waited for while a new chunk can be had. */
	void *p = fit(a, npages, align, w, !(w == GROW && hz_claim_stalled(a)), &c);
	if (!p && w == GROW) {
		pthread_mutex_unlock(&a->lock);
		hz_fresh_probe_if_due(0); /* the new chunk is what it decides */
		hz_arena_grow(a);
		pthread_mutex_lock(&a->lock);
		p = fit(a, npages, align, ANY, 1, &c); /* another thread may have taken or added room */
	}
	struct hz_zero_plan plan;
	int readvise = 0, sample = 0, all_fresh = 0, advice = 0;
	if (p) {
		size_t i = (size_t)((unsigned char *)p - c->base) >> HZ_PAGE_SHIFT;
		size_t fresh = c->taken_fresh << HZ_PAGE_SHIFT;
		if (fresh) {
			/* Fresh pages: the chunk advised anew where the decision
			 * changed since it was; the block's first huge page,
			 * when none of it is in memory, touched and timed, a
			 * sample of what fresh huge pages cost (the program
			 * touches a block's first page first). */
			int now = hz_fresh_advice_now(c->advice);
			readvise = now != c->advice ? now : 0;
			c->advice = advice = now;
			all_fresh = c->taken_fresh == npages;
			size_t h = i & ~(HZ_HUGE_PAGES - 1);
			sample = now == HZ_ADVISED_HUGE && hz_fresh_sampling() && !c->taken_clean &&
				 !hz_chunk_any_in_memory(c, h, h + HZ_HUGE_PAGES);
		}
		/* The reserve (chunk pages) refills up to what chunks handed out
		 * not in memory; an arena's first block says nothing of what
		 * comes next (a program that recycles it wants no reserve). */
		if (a->n.nalloc)
			a->missed += fresh;
		if (fresh || c->taken_clean)
			out->refill = 1;
		out->fresh = fresh;
		count_refaults(a, c);
		/* The zeroer's work taken: populated (no fault either way),
		 * and cleared, which pays for a calloc only: a malloc's
		 * program writes the block itself (a JVM zeroes its buffers). */
		a->populated.paid += c->taken_populated << HZ_PAGE_SHIFT;
		size_t cleared = (c->taken_clean - c->taken_populated) << HZ_PAGE_SHIFT;
		if (zero)
			a->cleared.paid += cleared;
		else
			a->cleared.wasted += cleared;
		hz_arena_collide(a, c, i, i + npages, NULL);
		if (zero) {
			hz_chunk_zero_plan(c, p, &plan);
			a->n.known_zero += plan.known_zero;
			a->n.cleared_caller += (npages << HZ_PAGE_SHIFT) - plan.known_zero;
		}
		hz_chunk_mark_dirty(c, p); /* the program writes it from now on */
		a->last_npages = npages;
		a->allocated += npages << HZ_PAGE_SHIFT;
		hz_arena_count_alloc(a, npages << HZ_PAGE_SHIFT, fresh, zero);
	}
	pthread_mutex_unlock(&a->lock);
	if (readvise) /* outside the lock: the kernel's mapping lock may wait */
		hz_fresh_readvise(c->base, HZ_CHUNK_SIZE, readvise);
	if (all_fresh && !c->hugetlb && hz_fresh_watch(p, p, npages << HZ_PAGE_SHIFT, advice, out->populate) == 1)
		sample = 0; /* its pages are small for the while */
	if (sample) {
		uint64_t t0 = hz_os_now_ns();
		*(volatile unsigned char *)p = 0; /* the zero it reads as */
		hz_fresh_sample(hz_os_now_ns() - t0);
	}
	if (p && zero) /* outside the lock: the block is ours alone */
		hz_chunk_zero_runs(c, &plan, p);
	return p;
}

/* The arena i steps after home. */
static struct hz_arena *next_arena(const struct hz_arena *home, unsigned i)
{
	return &hz_arenas[((unsigned)(home - hz_arenas) + i) % HZ_ARENAS];
}

void *hz_run_alloc(size_t npages, size_t align, int zero, struct hz_handout *out)
{
	struct hz_arena *home = hz_arena_of_thread();
	void *p = alloc_in(home, npages, align, zero, IN_MEMORY_IF_FREE, out);
	/* Memory another thread's arena holds free in memory before pages
	 * that fault in: a page given back and taken again is a fault, a
	 * lock taken is not (a JVM's buffers freed by its cleaner thread, a
	 * server's blocks freed by another worker). */
	for (unsigned i = 1; !p && i < HZ_ARENAS; i++)
		p = alloc_in(next_arena(home, i), npages, align, zero, IN_MEMORY_IF_FREE, out);
	if (!p)
		p = alloc_in(home, npages, align, zero, GROW, out);
	/* No chunk could be mapped: room in the other arenas' chunks; then
	 * with every kept block freed into its chunk, where it may make the
	 * room (beside free pages, or where the block asked for is smaller). */
	for (unsigned i = 1; !p && i < HZ_ARENAS; i++)
		p = alloc_in(next_arena(home, i), npages, align, zero, ANY, out);
	for (unsigned i = 0; !p && i < HZ_ARENAS; i++) {
		struct hz_arena *a = next_arena(home, i);
		pthread_mutex_lock(&a->lock);
		int had = a->nkept != 0;
		hz_arena_drop_kept(a);
		pthread_mutex_unlock(&a->lock);
		if (had)
			p = alloc_in(a, npages, align, zero, ANY, out);
	}
	return p;
}

size_t hz_run_usable(struct hz_chunk *c, const void *p)
{
	struct hz_arena *a = hz_arena_of(c->owner);
	pthread_mutex_lock(&a->lock);
	size_t n = hz_arena_is_kept(a, p) ? 0 : hz_chunk_block_pages(c, p); /* kept: freed */
	pthread_mutex_unlock(&a->lock);
	return n << HZ_PAGE_SHIFT;
}

void *hz_run_take_kept(size_t npages, size_t align)
{
	struct hz_arena *a = hz_arena_of_thread();
	if (!__atomic_load_n(&a->nkept, __ATOMIC_RELAXED) || pthread_mutex_trylock(&a->lock))
		return NULL;
	void *p = hz_arena_take_kept(a, npages, align);
	pthread_mutex_unlock(&a->lock);
	return p;
}

int hz_run_free(struct hz_chunk *c, void *p, int cleared, size_t fresh_tail, int grown)
{
	struct hz_arena *a = hz_arena_of(c->owner);
	pthread_mutex_lock(&a->lock);
	/* A kept block is freed already: not a live one. */
	size_t n = hz_arena_is_kept(a, p) ? 0 : hz_chunk_block_pages(c, p), bytes = n << HZ_PAGE_SHIFT;
	size_t i = (size_t)((unsigned char *)p - c->base) >> HZ_PAGE_SHIFT;
	/* Kept where the arena's last block was of its length: a program
	 * that cycles blocks of one length (a buffer per request) takes it
	 * again; one that grows its blocks (a table replaced by one twice
	 * its size, then freed) would not, and the kept pages would only
	 * stand between free ones (Python's dicts: peak RSS 1.06x, faults
	 * 1.23x). Within the process's budget for free memory, and where free
	 * memory may outlive its free at all (a decay of 0 releases at once):
	 * what the arena holds grows by the block. The decay's pass
	 * (hz_budget_bound, which reads the clock and counts the free pages of
	 * every chunk) runs where no window has begun, at every
	 * HZ_RUN_KEEP_TICK-th block kept, at every one where there is no
	 * zeroer thread, and on the zeroer's tick (the free starts it). */
	int kept = n && n == a->last_npages && !cleared && !grown && bytes <= HZ_RUN_KEEP_MAX && hz_budget_decay_ns &&
		   hz_arenas_held() + bytes <= hz_budget_dirty_max;
	if (n) {
		a->n.nfree++;
		c->freed = ++a->frees;
		a->allocated -= bytes;
	}
	int dropped = 0;
	if (kept) {
		dropped = hz_arena_keep(a, c, p, n);
		hz_arena_publish(a, a->held + bytes);
		if (++a->keep_ticks % HZ_RUN_KEEP_TICK == 0 || !a->window_at || !hz_budget_ticked)
			hz_budget_bound(a);
		/* The pass may have released every kept block, this one too:
		 * dirty memory in its chunk, for the zeroer. */
		kept = a->nkept && a->kept[a->nkept - 1].p == p;
	} else if (n) {
		hz_chunk_free(c, p);
		if (cleared) {
			size_t tail = fresh_tail < n ? fresh_tail : 0;
			hz_chunk_set_clean(c, i, i + n - tail, 0);
			hz_chunk_set_fresh(c, i + n - tail, i + n);
		}
		if (grown)
			hz_budget_freed(a, bytes, c, i, i + n, NULL);
		hz_budget_bound(a);
	}
	pthread_mutex_unlock(&a->lock);
	return kept && !dropped ? 1 : n ? 0 : -1;
}

int hz_run_resize(struct hz_chunk *c, void *p, size_t old, size_t size)
{
	struct hz_arena *a = hz_arena_of(c->owner);
	size_t np = hz_round_up(size, HZ_PAGE) >> HZ_PAGE_SHIFT;
	pthread_mutex_lock(&a->lock);
	int ok = !hz_arena_is_kept(a, p) && hz_chunk_resize(c, p, np) == 0;
	if (ok) {
		size_t i = (size_t)((unsigned char *)p - c->base) >> HZ_PAGE_SHIFT;
		if (np << HZ_PAGE_SHIFT > old) { /* the pages taken after it */
			hz_arena_collide(a, c, i + (old >> HZ_PAGE_SHIFT), i + np, NULL);
			count_refaults(a, c);
			hz_arena_count_take(a, np << HZ_PAGE_SHIFT); /* a block of its new size taken */
		}
		a->allocated = a->allocated - old + (np << HZ_PAGE_SHIFT);
		hz_arena_note_low(a);
	}
	pthread_mutex_unlock(&a->lock);
	return ok ? 0 : -1;
}
