/* Hardened mode (hardened.c): zero on free, guard pages, and the
 * quarantine that catches small blocks freed twice. */
#include <stdlib.h>

#include "../obs/obs.h"
#include "../os/os.h"
#include "allocator.h"

int hz_hardened;
static uint64_t cleared_large, cleared_small, skipped, guards, guard_failures, quarantined;

void hz_hardened_setup(int on)
{
	hz_hardened = on;
}

/* ---- zero on free ---- */

/* Whole 2 MiB steps with no page in memory are left as they are: they
 * read zero already (never touched, or released), and a clear would
 * fault them in (a 1 GiB block of which the program touched 1%). Not
 * where swap is configured: a page swapped out is not in memory either,
 * and holds the program's bytes. The residency is read a window of
 * WINDOW pages at a time, swap asked for only when a step would be left,
 * and the steps to clear are streamed as runs: a block the program
 * touched whole costs one mincore per 8 MiB and one stream. */
#define STEP ((size_t)2 << 20)
#define WINDOW 2048

/* A freed large block is not read again soon: streamed past the caches
 * (the policy's last tier's zero kernel), which keep the program's
 * working set, as a clear of its own size would not. */
static void stream_zero(void *p, size_t n)
{
	unsigned k = hz_policy.zero[HZ_TIERS - 1];
	hz_count_kernel(k, n);
	hz_fill(k, p, 0, n);
}

/* The end of the step from b: the next STEP boundary, or e. */
static unsigned char *step_end(unsigned char *b, unsigned char *e)
{
	unsigned char *next = (unsigned char *)hz_round_up((uintptr_t)b + 1, STEP);
	return next < e ? next : e;
}

/* Which steps of [b, e) (at most WINDOW pages) hold a page in memory, bit
 * i for the i-th; -1 when that cannot be read. A frame of its own: the
 * vector is gone before the clears run. */
static HZ_NOINLINE long resident_steps(unsigned char *b, unsigned char *e)
{
	unsigned char v[WINDOW];
	if (hz_os_residency(b, (size_t)(e - b) >> HZ_PAGE_SHIFT, v))
		return -1;
	long mask = 0;
	size_t k = 0; /* b's page in v */
	for (int i = 0; b < e; i++) {
		unsigned char *next = step_end(b, e);
		size_t end = k + ((size_t)(next - b) >> HZ_PAGE_SHIFT);
		for (; k < end; k++)
			if (v[k] & 1) {
				mask |= 1L << i;
				break;
			}
		k = end;
		b = next;
	}
	return mask;
}

/* Clears the steps of the large block [b, e) (page-aligned) that hold a
 * page in memory, all of them where the residency or the swap cannot be
 * learnt or swap is configured; the bytes cleared. */
static size_t clear_resident(unsigned char *b, unsigned char *e)
{
	unsigned char *run = b; /* the steps to clear not yet streamed: [run, b) */
	size_t done = 0;
	int all = 0, swap = -1;
	while (b < e && !all) {
		/* A window of whole steps: WINDOW pages at most, cut at a step's end */
		unsigned char *we = e;
		if ((size_t)(e - b) > (size_t)WINDOW << HZ_PAGE_SHIFT)
			we = (unsigned char *)(((uintptr_t)b + ((size_t)WINDOW << HZ_PAGE_SHIFT)) & ~(uintptr_t)(STEP - 1));
		long mask = resident_steps(b, we);
		for (int i = 0; b < we; i++) {
			unsigned char *next = step_end(b, we);
			int out = mask >= 0 && !(mask >> i & 1); /* no page of the step in memory */
			if (out && swap < 0)
				swap = hz_os_swap_possible();
			if (out && !swap) { /* left: the run so far is streamed */
				if (run < b)
					stream_zero(run, (size_t)(b - run));
				done += (size_t)(b - run);
				run = next;
			}
			b = next;
		}
		all = mask < 0 || swap > 0; /* the rest is cleared whole */
	}
	if (run < e)
		stream_zero(run, (size_t)(e - run));
	return done + (size_t)(e - run);
}

void hz_hardened_clear(void *p, size_t n, int large)
{
	size_t done = n;
	if (!large)
		hz_fill_counted(p, 0, n);
	else if (n < 2 * STEP)
		stream_zero(p, n);
	else
		done = clear_resident(p, (unsigned char *)p + n); /* page-aligned: a large block's pages */
	__atomic_fetch_add(large ? &cleared_large : &cleared_small, done, __ATOMIC_RELAXED);
	__atomic_fetch_add(&skipped, n - done, __ATOMIC_RELAXED);
}

void hz_hardened_reused(const void *p)
{
	const uint64_t *w = p;
	uint64_t any = 0;
	for (int i = 0; i < 8; i++)
		any |= w[i];
	if (any) {
		hz_os_log("malloc(): a freed block was written to (write after free)", NULL, NULL);
		abort();
	}
}

/* ---- guard pages ---- */

void hz_hardened_guard(void *p, size_t size, int on)
{
	if (!hz_os_guard(p, size, on)) {
		if (on)
			__atomic_fetch_add(&guards, 1, __ATOMIC_RELAXED);
	} else if (on) { /* no guard (a mapping limit): the block works without one */
		__atomic_fetch_add(&guard_failures, 1, __ATOMIC_RELAXED);
	}
}

int hz_hardened_guard_failed(void)
{
	return __atomic_load_n(&guard_failures, __ATOMIC_RELAXED) != 0;
}

/* ---- quarantine ---- */

/* Shards chosen by the block's address, so a block freed twice meets
 * itself whichever threads free it; each a ring of the last SLOTS blocks
 * freed there, at most CAP bytes. A spin lock each, held for a scan of
 * the ring, taken by the fork handlers around a fork. */
#define SHARDS 16
#define SLOTS 32
#define CAP ((size_t)256 << 10)

static struct shard {
	int lock;
	unsigned head, count; /* the oldest, how many */
	size_t bytes;
	void *p[SLOTS];
	size_t n[SLOTS];
} __attribute__((aligned(64))) shards[SHARDS];

static struct shard *shard_of(const void *p)
{
	uintptr_t a = (uintptr_t)p >> 4;
	return &shards[(a ^ (a >> 7) ^ (a >> 13)) % SHARDS];
}

static void lock(struct shard *s)
{
	while (__atomic_exchange_n(&s->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&s->lock, __ATOMIC_RELAXED))
			hz_os_yield();
}

static void unlock(struct shard *s)
{
	__atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
}

static int held(const struct shard *s, const void *p)
{
	for (unsigned i = 0, k = s->head; i < s->count; i++, k = (k + 1) % SLOTS)
		if (s->p[k] == p)
			return 1;
	return 0;
}

int hz_quarantine_put(void *p, size_t n, struct hz_evicted *out)
{
	struct shard *s = shard_of(p);
	out->count = 0;
	lock(s);
	if (held(s, p)) {
		unlock(s);
		return -1;
	}
	while (s->count && (s->count == SLOTS || s->bytes + n > CAP)) {
		out->p[out->count] = s->p[s->head];
		out->n[out->count++] = s->n[s->head];
		s->bytes -= s->n[s->head];
		s->head = (s->head + 1) % SLOTS;
		s->count--;
	}
	if (n <= CAP) {
		unsigned k = (s->head + s->count) % SLOTS;
		s->p[k] = p;
		s->n[k] = n;
		s->count++;
		s->bytes += n;
		__atomic_fetch_add(&quarantined, 1, __ATOMIC_RELAXED);
	} else {
		out->p[out->count] = p;
		out->n[out->count++] = n;
	}
	unlock(s);
	return 0;
}

int hz_quarantine_holds(const void *p)
{
	struct shard *s = shard_of(p);
	lock(s);
	int r = held(s, p);
	unlock(s);
	return r;
}

void hz_quarantine_fork_prepare(void)
{
	for (int i = 0; i < SHARDS; i++)
		lock(&shards[i]);
}

void hz_quarantine_fork_parent(void)
{
	for (int i = SHARDS - 1; i >= 0; i--)
		unlock(&shards[i]);
}

void hz_quarantine_fork_child(void)
{
	hz_quarantine_fork_parent();
}

void hz_hardened_counters(hz_counter_fn fn, void *arg)
{
	size_t held_bytes = 0;
	for (int i = 0; i < SHARDS; i++)
		held_bytes += __atomic_load_n(&shards[i].bytes, __ATOMIC_RELAXED);
	fn(arg, "hardened.on", (uint64_t)hz_hardened, 1);
	/* What free cleared (the clearing moved there from calloc, which
	 * finds the arenas' freed blocks known zero: calloc.large.known_zero_bytes). */
	fn(arg, "hardened.cleared_large_bytes", __atomic_load_n(&cleared_large, __ATOMIC_RELAXED), 0);
	fn(arg, "hardened.cleared_small_bytes", __atomic_load_n(&cleared_small, __ATOMIC_RELAXED), 0);
	/* Freed bytes in no page in memory, left as they were: zero already. */
	fn(arg, "hardened.not_resident_bytes", __atomic_load_n(&skipped, __ATOMIC_RELAXED), 0);
	fn(arg, "hardened.guards", __atomic_load_n(&guards, __ATOMIC_RELAXED), 0);
	fn(arg, "hardened.guard_failures", __atomic_load_n(&guard_failures, __ATOMIC_RELAXED), 0);
	fn(arg, "hardened.quarantined", __atomic_load_n(&quarantined, __ATOMIC_RELAXED), 0);
	fn(arg, "hardened.quarantine_bytes", held_bytes, 1);
}
