/* The background zeroer (zeroer.c): its work and its thread, one idea:
 * the work runs only on the thread, and the thread only runs the work. */
#define _GNU_SOURCE /* pthread_cond_clockwait (glibc 2.30) */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "../os/os.h"
#include "allocator.h"

static void add(uint64_t *v, uint64_t k)
{
	__atomic_fetch_add(v, k, __ATOMIC_RELAXED);
}

/* ---- the work: claim, clear or populate, publish; the decay ---- */

int hz_work_forked;
struct hz_work_counts hz_work_n;

#define STEP ((size_t)256 << 10)

/* Whether a kind of the zeroer's work pays in an arena (its lock held):
 * what it populated, or cleared, was handed out, not mostly released
 * unused (a program that frees and trims at once, whose faults a
 * population would only compete with, and whose trim makes a clear
 * wasted bandwidth). The record halves at each decay, and beyond 1 GiB. */
static int pays(struct hz_record *r)
{
	if (r->paid + r->wasted > ((size_t)1 << 30)) {
		r->paid /= 2;
		r->wasted /= 2;
	}
	return r->wasted <= 2 * r->paid + 2 * HZ_HUGE_SIZE;
}

/* Whether the program took or freed a large block in a since the zeroer
 * last looked there: 1, or 0 when it has been still since (the zeroer
 * looks again BUSY_NS after a 1: still that long at least; a's lock
 * held).
 * A program that frees a block and takes one again at once (a buffer per
 * request, back to back) clears it itself, hot in its cache; a claim of
 * the block it is about to take makes it wait for the clear's step, or
 * take other memory, and the two clears compete for the memory's
 * bandwidth (32 MiB blocks recycled back to back ran at 0.51-0.72x the
 * speed without the zeroer). The arena's counters, read on the zeroer's
 * thread only: the allocator's calls pay nothing for it, and no clock is
 * read (a coarse one ticks in milliseconds). The look again comes
 * BUSY_NS later, twice as late after each busy look in a row up to
 * BUSY_MAX_NS, and no free wakes the zeroer before that: MariaDB's sort
 * buffers, taken and freed 2,000 times a second, woke it 430-500 times a
 * second at a 1.6 ms bound. A look asks about the whole rest before it:
 * asked about its last 50 us only, it found MariaDB's half-millisecond
 * gaps quiet, claimed the buffers MariaDB was about to take and woke as
 * often as before. So the first clear after the program's large calls
 * stop comes up to 2 x 25.6 ms later. */
#define BUSY_NS ((uint64_t)50000u)
#define BUSY_MAX_NS ((uint64_t)25600000u)
static int arena_busy(struct hz_arena *a)
{
	static uint64_t calls_seen[HZ_ARENAS];
	size_t i = (size_t)(a - hz_arenas);
	uint64_t calls = a->n.nalloc + a->n.nfree;
	int busy = calls != calls_seen[i];
	calls_seen[i] = calls;
	return busy;
}

/* The arena's most recently freed dirty memory, claimed for a clear (a's
 * lock held): 1, 0 when it has none, HZ_WORK_BUSY while the program
 * takes and frees large blocks there (arena_busy). */
static int claim_dirty(struct hz_arena *a)
{
	struct hz_chunk *best = NULL;
	size_t lo = 0, hi = 0, l, r;
	for (unsigned k = 0; k < a->nchunks; k++) {
		struct hz_chunk *c = a->chunks[k];
		if (c->dirty_free && (!best || c->freed > best->freed) && !hz_chunk_next_run(c, 1, 0, &l, &r)) {
			best = c;
			lo = l;
			hi = r;
		}
	}
	struct hz_huge *h = NULL;
	for (struct hz_huge *q = a->cache; q; q = q->next)
		if (q->dirty && !q->shared && (!h || q->freed > h->freed))
			h = q;
	if (!best && !h)
		return 0;
	if (arena_busy(a))
		return HZ_WORK_BUSY;
	if (h && (!best || h->freed > best->freed)) {
		size_t len = h->mapped - h->cleared < HZ_HUGE_SIZE ? h->mapped - h->cleared : HZ_HUGE_SIZE;
		hz_claim_set(a, NULL, 0, 0, h, h->cleared, len, 0);
		return 1;
	}
	if (best) {
		hz_claim_set(a, best, lo, hi, NULL, 0, 0, 0);
		return 1;
	}
	return 0;
}

/* What a's reserve may take now (its lock held): 0 when it may not (see
 * claim_fresh). */
static size_t fresh_wanted(struct hz_arena *a, size_t reserve)
{
	size_t mine = hz_arena_clean_bytes(a), most = hz_budget_reserve_max;
	size_t want = a->missed < most ? a->missed : most;
	/* Not before a quarter of the reserve was taken fresh: a program whose
	 * large blocks mostly recycle (a few fresh pages now and then) keeps
	 * its footprint; half the budget at most: room left for what the
	 * program frees. */
	if (!pays(&a->populated) || a->missed < most / 4 || reserve >= most || mine >= want ||
	    hz_arena_free_bytes(a) + HZ_HUGE_SIZE > hz_budget_dirty_max / 2)
		return 0;
	return want - mine < most - reserve ? want - mine : most - reserve;
}

/* Free pages not in memory of a (its lock held), claimed for population
 * while the reserve allows (all arenas' clean pages below hz_budget_reserve_max,
 * a's below what a handed out of pages not in memory since its last
 * decay: a program that recycles its blocks gets no reserve it would not
 * use; and none before a quarter of the reserve's size was), a's dirty
 * budget and room (peak_room) do: 1; 0 when a has none (it may grow), -1 when it may not
 * take more. One claim is one run of hz_chunk_next_run, within one huge
 * page: the program's faulting is asked again before the next. */
static int claim_fresh(struct hz_arena *a, size_t reserve, size_t room)
{
	size_t left = fresh_wanted(a, reserve);
	left = left < room ? left : room;
	if (!left)
		return -1;
	for (unsigned k = 0; k < a->nchunks; k++) {
		size_t lo, hi;
		struct hz_chunk *c = a->chunks[k];
		if (c->free_pages > c->dirty_free + c->clean_free && !hz_chunk_next_run(c, 0, 0, &lo, &hi)) {
			size_t pages = hz_round_up(left, HZ_PAGE) >> HZ_PAGE_SHIFT;
			hz_claim_set(a, c, lo, hi - lo > pages ? lo + pages : hi, NULL, 0, 0, 1);
			return 1;
		}
	}
	return 0;
}

/* Clears [p, p + n) with kernel k a step at a time while the piece is not
 * taken; returns the bytes cleared. Counted as every clear of the library
 * is (kernel.*, on the zeroer's own thread's block), beside
 * background.cleared_bytes. */
static size_t clear_steps(unsigned k, unsigned char *p, size_t n)
{
	size_t done = 0;
	while (done < n && !__atomic_load_n(&hz_claim.taken, __ATOMIC_RELAXED)) {
		size_t m = n - done < STEP ? n - done : STEP;
		__atomic_store_n(&hz_claim.step_at, hz_os_now_ns(), __ATOMIC_RELAXED);
		hz_fill(k, p + done, 0, m);
		hz_count_kernel(k, m);
		done += m;
	}
	return done;
}

/* Which of the claimed piece's n pages from p are not in memory and
 * so read zero (hz_claim.out): a freed block the program wrote a part of
 * (a sort buffer, a page cache) is dirty in full, and clearing the rest
 * would fault it in, raising the footprint for nothing. Not where swap may
 * hold a page, nor where mincore cannot say: then every page is cleared.
 * Swap is asked before and after the residency, so that no swap-out can
 * fall between. */
static void learn_out(unsigned char *p, size_t n)
{
	unsigned char v[HZ_HUGE_PAGES];
	struct hz_claim *cl = &hz_claim;
	if (hz_os_swap_possible() || hz_os_residency(p, n, v) || hz_os_swap_possible())
		return;
	hz_memzero(cl->out, sizeof cl->out);
	for (size_t i = 0; i < n; i++)
		if (!(v[i] & 1))
			cl->out[i / 64] |= 1ull << (i % 64);
	cl->zero_known = 1;
}

/* Clears the claimed piece outside the lock; returns the bytes done:
 * cleared, or not in memory and zero. After a fork, only the pages this
 * process maps alone: a page still shared copy-on-write would be copied
 * by the clear, for nothing. */
static size_t clear_claimed(void)
{
	struct hz_claim *cl = &hz_claim;
	unsigned char *p = cl->c ? cl->c->base + (cl->lo << HZ_PAGE_SHIFT) : cl->h->base + cl->off;
	size_t len = cl->c ? (cl->hi - cl->lo) << HZ_PAGE_SHIFT : cl->len;
	size_t n = len >> HZ_PAGE_SHIFT;
	/* The kernel calloc would take for all the dirty memory at hand (as
	 * fills alone learnt it where the policy learns): streaming stores
	 * for extents larger than the cache, whose lines would only evict the
	 * program's; temporal ones below, whose lines the program finds in
	 * the shared cache when it takes the block again. */
	unsigned k = hz_policy_pick_learnt(0, cl->extent);
	if (__atomic_load_n(&hz_work_forked, __ATOMIC_RELAXED)) {
		/* Where the kernel cannot say (no /proc, no fd left, a filter),
		 * every page counts as shared: published as such, left to calloc. */
		cl->checked = 1;
		if (hz_os_pages_exclusive(p, n, cl->alone))
			return 0;
	}
	learn_out(p, n);
	size_t done = 0;
	for (size_t i = 0; i < n;) {
		int alone = hz_claim_alone(i), out = hz_claim_out(i);
		size_t j = i + 1;
		while (j < n && hz_claim_alone(j) == alone && hz_claim_out(j) == out)
			j++;
		size_t want = (j - i) << HZ_PAGE_SHIFT;
		if (alone && out) {
			done += want;
			cl->out_bytes += want;
		} else if (alone) {
			size_t got = clear_steps(k, p + (i << HZ_PAGE_SHIFT), want);
			done += got;
			if (got < want)
				break; /* taken */
		}
		i = j;
	}
	return done;
}

/* Does the claimed piece outside the lock: the bytes done; *failed when
 * the kernel has no MADV_POPULATE_WRITE (before Linux 5.14). */
static size_t do_claimed(int *failed)
{
	*failed = 0;
	if (!hz_claim.populate)
		return clear_claimed();
	size_t len = (hz_claim.hi - hz_claim.lo) << HZ_PAGE_SHIFT;
	/* A whole huge page of a chunk advised for them: a sample of what a
	 * fresh huge page costs (fresh.c). */
	int sample = len == HZ_HUGE_SIZE && __atomic_load_n(&hz_claim.c->advice, __ATOMIC_RELAXED) == HZ_ADVISED_HUGE && hz_fresh_sampling();
	uint64_t t0 = sample ? hz_os_now_ns() : 0;
	int e = hz_os_populate(hz_claim.c->base + (hz_claim.lo << HZ_PAGE_SHIFT), len);
	if (!e && sample)
		hz_fresh_sample(hz_os_now_ns() - t0);
	if (!e)
		return len;
	*failed = !__atomic_exchange_n(&hz_claim.taken, 1, __ATOMIC_RELAXED) && e == EINVAL;
	return 0;
}

/* Ends the claim in a (its lock held) and counts what it did. */
static void end_claimed(struct hz_arena *a, size_t done)
{
	int chunk = hz_claim.c != NULL, populate = hz_claim.populate;
	size_t len = hz_claim.len, out = hz_claim.out_bytes;
	switch (hz_claim_end(done)) {
	case HZ_CLAIM_ABANDONED:
		add(&hz_work_n.abandoned, done);
		break;
	case HZ_CLAIM_PUBLISHED:
		add(chunk && populate ? &hz_work_n.populated : &hz_work_n.cleared, (chunk ? done : len) - out);
		add(&hz_work_n.not_resident, out);
		break;
	case HZ_CLAIM_SHARED:
		break;
	}
	hz_arena_publish(a, hz_arena_free_bytes(a)); /* fresh or clean now: the process's budget reads it */
	pthread_cond_broadcast(&a->claim_done);
}

/* Whether the program's threads took page faults in the last QUIET_NS:
 * it is touching memory, and a population would compete with its faults
 * (on a VM, for the host's backing too): 1, or 0. Where the counts cannot
 * be read, it may always be: -1, from then on, and no population. Read on
 * the zeroer's thread. */
#define QUIET_NS ((uint64_t)1000000u)
static int program_faulting(void)
{
	static uint64_t others_seen, quiet_since;
	static int unknown;
	uint64_t process, self, now = hz_os_now_ns();
	if (unknown || hz_os_minor_faults(&process, &self))
		return unknown = -1;
	if (process - self != others_seen) {
		others_seen = process - self;
		quiet_since = now;
	}
	return now - quiet_since < QUIET_NS;
}

/* The bytes the reserve may add to the process's footprint now: what
 * lies between its resident bytes and the peak the program reached (its
 * own address space's high-water mark, not that of the process it was
 * exec'd from), so that the reserve never raises that peak; 0 where they
 * cannot be read.
 * A program that touched no more than it keeps gets no reserve. */
static size_t peak_room(void)
{
	size_t rss, peak;
	if (hz_os_footprint(&rss, &peak) || rss >= peak)
		return 0;
	return peak - rss;
}

/* Whether some arena's reserve may take pages now: only then is the
 * program's faulting worth asking about. */
static int reserve_wanted(size_t reserve)
{
	int any = 0;
	for (int n = 0; n < HZ_ARENAS && !any; n++) {
		struct hz_arena *a = &hz_arenas[n];
		pthread_mutex_lock(&a->lock);
		any = fresh_wanted(a, reserve) != 0;
		pthread_mutex_unlock(&a->lock);
	}
	return any;
}

int hz_work_once(void)
{
	static unsigned next;
	int deferred = 0;
	for (int pass = 0; pass < 2; pass++) {
		/* The reserve as it is: free clean pages across the arenas. */
		size_t reserve = pass ? hz_arenas_clean_bytes() : 0, room = 0;
		if (pass) {
			/* A program busy with its large blocks: no population
			 * beside it either (nor the system calls that ask). */
			if (deferred || !reserve_wanted(reserve))
				return deferred;
			int faulting = program_faulting();
			if (faulting)
				return faulting > 0 ? HZ_WORK_DEFERRED : 0;
			if ((room = peak_room()) < HZ_PAGE)
				return 0;
		}
		for (int n = 0; n < HZ_ARENAS; n++) {
			struct hz_arena *a = &hz_arenas[(next + (unsigned)n) % HZ_ARENAS];
			/* Its lock not even taken where nothing is free (its
			 * published bytes). */
			if (!pass && !__atomic_load_n(&a->held, __ATOMIC_RELAXED))
				continue;
			pthread_mutex_lock(&a->lock);
			int got = pass ? claim_fresh(a, reserve, room) : !pays(&a->cleared) ? -1 : claim_dirty(a);
			if (got == 0 && pass && a->nchunks) {
				/* The reserve wants room: a new chunk, mapped outside the
				 * lock, as fresh memory's measurement decides (its first
				 * one too, when the program's blocks all come from the
				 * reserve and the program maps nothing itself). */
				pthread_mutex_unlock(&a->lock);
				hz_fresh_probe_if_due(0);
				if (hz_arena_grow(a))
					continue;
				pthread_mutex_lock(&a->lock);
				got = claim_fresh(a, reserve, room);
			}
			pthread_mutex_unlock(&a->lock);
			if (got == HZ_WORK_BUSY)
				deferred = HZ_WORK_BUSY;
			if (got != 1)
				continue;
			int failed;
			size_t done = do_claimed(&failed);
			pthread_mutex_lock(&a->lock);
			end_claimed(a, done);
			pthread_mutex_unlock(&a->lock);
			if (failed) /* no MADV_POPULATE_WRITE: no reserve */
				hz_budget_no_reserve();
			next = (next + (unsigned)n + 1) % HZ_ARENAS;
			return 1;
		}
	}
	return deferred;
}

int hz_work_decay(void)
{
	int holds = 0;
	for (int i = 0; i < HZ_ARENAS; i++) {
		struct hz_arena *a = &hz_arenas[i];
		pthread_mutex_lock(&a->lock);
		if (hz_arena_free_bytes(a))
			hz_budget_bound(a);
		holds |= hz_arena_free_bytes(a) != 0;
		pthread_mutex_unlock(&a->lock);
	}
	return holds;
}

/* ---- the thread: start, wake, linger, exit ---- */

int hz_zeroer_enabled;

/* The thread: a crew of one (crew.c); its wake-up, under the crew's lock. */
static struct hz_crew crew = HZ_CREW_INIT;
static struct {
	int pending;  /* work was signalled: run again before sleeping */
	int sleeping; /* in its timed sleep */
	int failed;   /* no thread could be made: none is tried again */
} thread;

/* The thread's counters; a forked child's start from zero. */
static struct {
	uint64_t cpu_ns, wakeups, exits;
} n;

/* How long the zeroer sleeps with nothing to do while the arenas hold
 * free memory: it runs the decay on waking. */
#define IDLE_TICK_MS 250
/* The thread ends after this long with nothing to do. */
#define LINGER_NS ((uint64_t)1000000000u)

/* ns from now on CLOCK_MONOTONIC (hz_os_now_ns's clock), for a timed
 * wait that no change of the wall clock lengthens. */
static struct timespec after(uint64_t ns)
{
	struct timespec ts;
	hz_crew_timespec(hz_os_now_ns() + ns, &ts);
	return ts;
}

/* Sleeps ns, or until a quiesce (hz_crew_quiesce's broadcast); a free's
 * kick only marks work pending (thread.sleeping is not set). */
static void rest(uint64_t ns, uint64_t gen)
{
	struct timespec t = after(ns);
	pthread_mutex_lock(&crew.lock);
	if (!hz_crew_must_end(&crew, gen))
		pthread_cond_clockwait(&crew.wake, &crew.lock, CLOCK_MONOTONIC, &t);
	pthread_mutex_unlock(&crew.lock);
}

/* The next look busy_ns later, twice as late each time in a row (up to
 * BUSY_MAX_NS), the decay still at its tick, for the arenas the program
 * does not free to meanwhile. */
static void back_off(uint64_t *busy_ns, uint64_t *decay_at, uint64_t gen)
{
	uint64_t now = hz_os_now_ns();
	if (now - *decay_at >= (uint64_t)IDLE_TICK_MS * 1000000u) {
		hz_work_decay();
		*decay_at = now;
	}
	rest(*busy_ns, gen);
	*busy_ns = *busy_ns < BUSY_MAX_NS ? 2 * *busy_ns : BUSY_MAX_NS;
}

/* Whether a kick marked work pending since the last call; cleared. */
static int take_pending(void)
{
	pthread_mutex_lock(&crew.lock);
	int kicked = thread.pending;
	thread.pending = 0;
	pthread_mutex_unlock(&crew.lock);
	return kicked;
}

static void *zeroer_main(void *arg)
{
	uint64_t gen = (uint64_t)(uintptr_t)arg;
	int slot = hz_crew_enter(&crew, gen);
	uint64_t cpu_base = hz_os_thread_cpu_ns(); /* this thread's clock */
	uint64_t idle_since = hz_os_now_ns(), deferred_since = 0, busy_ns = BUSY_NS, decay_at = idle_since;
	for (;;) {
		int stop = slot < 0 || hz_crew_must_end(&crew, gen);
		if (!stop)
			hz_fresh_probe_if_due(1); /* fresh memory's measurement again, off the program's threads */
		int worked = stop ? 0 : hz_work_once();
		uint64_t cpu = hz_os_thread_cpu_ns();
		add(&n.cpu_ns, cpu - cpu_base);
		cpu_base = cpu;
		if (worked == HZ_WORK_BUSY) {
			/* The program takes and frees large blocks: look again
			 * once it may have stopped (arena_busy). */
			back_off(&busy_ns, &decay_at, gen);
			deferred_since = 0;
			idle_since = hz_os_now_ns();
			continue;
		}
		int deferred = worked == HZ_WORK_DEFERRED;
		if (!deferred)
			deferred_since = 0;
		else if (!deferred_since)
			deferred_since = hz_os_now_ns();
		if (deferred && hz_os_now_ns() - deferred_since < LINGER_NS) {
			/* The program is faulting: look again in a millisecond
			 * (two system calls), to fill the reserve once it stops.
			 * For at most LINGER in a row, then at the decay's tick
			 * or the next free's wake. */
			hz_os_sleep_ms(1);
			continue;
		}
		if (worked == 1) {
			busy_ns = BUSY_NS;
			idle_since = hz_os_now_ns();
			continue;
		}
		/* A kick pending (a large free, or a malloc wanting the reserve,
		 * during the look or the rest before it), and nothing to do now:
		 * the program took its freed blocks back at once (a block freed
		 * and taken again, back to back), or its faults defer the reserve
		 * past the linger. Without this it looked again at once, every
		 * arena's lock taken beside the program at each free:
		 * churn_bench retake, 64 blocks of 1 MiB freed and taken again,
		 * took 475 ns a block against 359, with 3,355 context switches a
		 * million blocks against 34. As when busy, until work done or a
		 * timed sleep. */
		if (!stop && take_pending()) {
			back_off(&busy_ns, &decay_at, gen);
			idle_since = hz_os_now_ns();
			continue;
		}
		int holds = stop ? 0 : hz_work_decay();
		decay_at = hz_os_now_ns();
		if (holds)
			idle_since = hz_os_now_ns(); /* the linger counts from when the decay is done */
		pthread_mutex_lock(&crew.lock);
		/* A forked child's copy never runs; and with nothing to do for
		 * LINGER and no free memory left for the decay to release, or at
		 * exit, the thread ends: a process that exits later has no
		 * SCHED_IDLE thread left to tear its memory down (the last thread
		 * out does), slowly on a busy machine. The next large free starts
		 * another. */
		if (slot < 0 || hz_crew_must_end(&crew, gen) ||
		    (!thread.pending && !holds && hz_os_now_ns() - idle_since >= LINGER_NS)) {
			if (slot >= 0 && crew.gen == gen)
				add(&n.exits, 1);
			hz_crew_leave_locked(&crew, slot, gen);
			pthread_mutex_unlock(&crew.lock);
			return NULL;
		}
		if (!thread.pending) {
			busy_ns = BUSY_NS; /* a run of busy looks ends in a timed sleep */
			struct timespec t = after(holds ? (uint64_t)IDLE_TICK_MS * 1000000u : LINGER_NS);
			thread.sleeping = 1;
			pthread_cond_clockwait(&crew.wake, &crew.lock, CLOCK_MONOTONIC, &t);
			thread.sleeping = 0;
			add(&n.wakeups, 1);
		}
		thread.pending = 0;
		pthread_mutex_unlock(&crew.lock);
	}
	return NULL;
}

/* The thread of generation gen made: 0, or an errno. */
static HZ_NOINLINE int start_thread(uint64_t gen)
{
	return hz_os_thread_start(zeroer_main, (void *)(uintptr_t)gen);
}

static HZ_NOINLINE void start(void)
{
	uint64_t gen;
	if (pthread_mutex_trylock(&crew.lock))
		return; /* its thread holds it, ending: the next kick starts one */
	unsigned go = thread.failed ? 0 : hz_crew_reserve(&crew, 1, &gen);
	if (go)
		thread.pending = 0;
	pthread_mutex_unlock(&crew.lock);
	if (!go)
		return;
	int e = hz_crew_filtered(&crew) ? EPERM : start_thread(gen);
	hz_crew_started(&crew, gen, e);
	if (e)
		__atomic_store_n(&thread.failed, 1, __ATOMIC_RELAXED);
}

/* Whether the thread is running (not starting, not ending): lock-free. */
static int running(void)
{
	return __atomic_load_n(&crew.slot[0], __ATOMIC_ACQUIRE) == HZ_CREW_RUNNING;
}

void hz_zeroer_kick(int may_start, int wake)
{
	if (!hz_zeroer_enabled)
		return;
	if (hz_likely(running())) {
		/* Never waiting for the lock the SCHED_IDLE thread may hold: a
		 * wake missed is the decay's tick's. */
		if (!wake || __atomic_load_n(&thread.pending, __ATOMIC_RELAXED) || pthread_mutex_trylock(&crew.lock))
			return;
		if (crew.slot[0] == HZ_CREW_RUNNING) {
			thread.pending = 1;
			if (thread.sleeping)
				pthread_cond_broadcast(&crew.wake);
			pthread_mutex_unlock(&crew.lock);
			return;
		}
		pthread_mutex_unlock(&crew.lock);
	}
	/* The first start at a large free or calloc; once started, any large
	 * call that has work for it starts it again. */
	if (!__atomic_load_n(&crew.running, __ATOMIC_RELAXED) &&
	    (may_start || (wake && __atomic_load_n(&crew.starts, __ATOMIC_RELAXED))))
		start();
}

int hz_zeroer_quiesce(int forever, uint64_t bound_ns)
{
	/* Once the process exits, its last thread tears its memory down and
	 * the parent waits for that; a SCHED_IDLE zeroer, starved on a busy
	 * machine, took seconds so, whether mid-clear or on its way out. So a
	 * running one is raised (normal priority at least) where that is
	 * permitted before it is asked to end: its way out runs raised too. */
	return hz_crew_quiesce(&crew, forever, bound_ns);
}

void hz_zeroer_exit(void)
{
	hz_zeroer_quiesce(1, 200 * 1000000u);
}

void hz_zeroer_allow(int allowed)
{
	hz_crew_allow(&crew, allowed);
}

void hz_zeroer_stats(struct hz_zeroer_stats *out)
{
	out->running = running();
	out->sched = out->running ? __atomic_load_n(&crew.sched_got, __ATOMIC_RELAXED) : 0;
	out->starts = __atomic_load_n(&crew.starts, __ATOMIC_RELAXED);
	out->start_failures = __atomic_load_n(&crew.start_failures, __ATOMIC_RELAXED);
	out->sched_fallbacks = __atomic_load_n(&crew.sched_fallbacks, __ATOMIC_RELAXED);
	out->cleared = __atomic_load_n(&hz_work_n.cleared, __ATOMIC_RELAXED);
	out->populated = __atomic_load_n(&hz_work_n.populated, __ATOMIC_RELAXED);
	out->abandoned = __atomic_load_n(&hz_work_n.abandoned, __ATOMIC_RELAXED);
	out->not_resident = __atomic_load_n(&hz_work_n.not_resident, __ATOMIC_RELAXED);
	out->waits = __atomic_load_n(&hz_claim_waits, __ATOMIC_RELAXED);
	out->cpu_ns = __atomic_load_n(&n.cpu_ns, __ATOMIC_RELAXED);
	out->wakeups = __atomic_load_n(&n.wakeups, __ATOMIC_RELAXED);
	out->exits = __atomic_load_n(&n.exits, __ATOMIC_RELAXED);
}

void hz_zeroer_fork_prepare(void)
{
	hz_crew_fork_prepare(&crew);
}

void hz_zeroer_fork_parent(void)
{
	hz_crew_fork_parent(&crew);
}

void hz_zeroer_fork_child(void)
{
	/* The child's zeroer starts when the child needs one. */
	thread.pending = thread.sleeping = thread.failed = 0;
	n = (typeof(n)){0};
	hz_crew_fork_child(&crew);
}
