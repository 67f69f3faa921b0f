/* Large blocks across arenas and threads: ownership in O(1), refusals of
 * foreign and double frees, calloc's zeros after dirty frees. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../allocator/allocator.h"
#include "../util/fillcheck.h"

/* The entry's calls on a pointer, its owner looked up as the library's
 * callers do (a block that is not live never reaches hz_large_realloc:
 * the caller aborts on it; here it is EINVAL). */
static size_t l_usable(const void *p)
{
	return hz_large_usable(hz_large_owner(p), p);
}
static int l_free(void *p)
{
	return hz_large_free(hz_large_owner(p), p);
}
static int l_owns(const void *p)
{
	return hz_large_owns(hz_large_owner(p));
}
static void *l_realloc(void *p, size_t size)
{
	size_t old = l_usable(p);
	if (!old) {
		errno = EINVAL;
		return NULL;
	}
	return hz_large_realloc(hz_large_owner(p), p, old, size);
}

/* Blocks aligned up to a huge page come from the arenas, on their
 * alignment, chunk blocks and huge blocks alike, and free as any other. */
/* A block of n bytes allocated, written with byte and freed; the
 * arenas' figures before and after. */
static unsigned char *written_and_freed(size_t n, int byte, struct hz_large_stats *before,
					 struct hz_large_stats *after)
{
	hz_large_stats(before);
	unsigned char *p = hz_large_alloc(n, 0);
	cr_assert_not_null(p);
	memset(p, byte, n);
	cr_assert_eq(l_free(p), 0);
	hz_large_stats(after);
	return p;
}

Test(large, aligned_blocks)
{
	size_t sizes[] = {HZ_PAGE, 100000, (size_t)3 << 20, HZ_RUN_MAX + 1};
	for (size_t a = HZ_PAGE; a <= HZ_HUGE_SIZE; a <<= 1)
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			unsigned char *p = hz_large_alloc_aligned(sizes[i], a, i & 1);
			cr_assert_not_null(p);
			cr_assert_eq((uintptr_t)p % a, 0, "size %zu aligned to %zu: %p", sizes[i], a, p);
			cr_assert_geq(l_usable(p), sizes[i]);
			size_t bad;
			if (i & 1)
				cr_assert(all_bytes(p, sizes[i], 0, &bad), "byte %zu", bad);
			memset(p, 0x5A, sizes[i]);
			cr_assert_eq(l_free(p), 0);
		}
}

Test(large, sizes_ownership_and_bad_pointers)
{
	size_t sizes[] = {1, 4095, 4096, 4097, 100000, (size_t)3 << 20, HZ_RUN_MAX};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		unsigned char *p = hz_large_alloc(sizes[i], 0);
		cr_assert_not_null(p, "size %zu", sizes[i]);
		cr_assert_eq((uintptr_t)p % HZ_PAGE, 0);
		size_t u = l_usable(p);
		cr_assert(u >= sizes[i] && u - sizes[i] < HZ_PAGE, "size %zu usable %zu", sizes[i], u);
		memset(p, 0x3C, u);
		cr_assert_eq(l_usable(p + HZ_PAGE * (u > HZ_PAGE)), u > HZ_PAGE ? 0 : u);
		cr_assert_eq(l_free(p), 0);
		cr_assert_eq(l_free(p), -1, "double free of %zu bytes accepted", sizes[i]);
		cr_assert_eq(l_usable(p), 0);
	}
	int local;
	void *heap = malloc(64);
	cr_assert_null(hz_chunk_of(&local));
	cr_assert_null(hz_chunk_of(heap));
	cr_assert_eq(l_free(&local), -1);
	cr_assert_eq(l_free(heap), -1);
	cr_assert_null(hz_chunk_of((void *)~(uintptr_t)0));
	free(heap);
	errno = 0;
	cr_assert_null(hz_large_alloc(0, 0));
	cr_assert_eq(errno, ENOMEM);
	errno = 0;
	cr_assert_null(hz_large_alloc(HZ_HUGE_MAX + 1, 0));
	cr_assert_eq(errno, ENOMEM);
	errno = 0;
	cr_assert_null(hz_large_alloc(SIZE_MAX, 1));
	cr_assert_eq(errno, ENOMEM);
}

/* Beyond a chunk: a mapping of its own, recycled after free, cleared
 * (not refaulted) for calloc, within the cache budget. */
Test(large, huge_blocks_recycled_and_bounded, .timeout = 60)
{
	size_t n = (size_t)100 << 20, bad;
	unsigned char *p = hz_large_alloc(n, 1);
	cr_assert_not_null(p);
	cr_assert_null(hz_chunk_of(p), "a huge block is not in a chunk");
	cr_assert_eq(l_usable(p), n);
	cr_assert(all_bytes(p, n, 0, &bad));
	memset(p, 0xEE, n);
	cr_assert_eq(l_free(p + HZ_PAGE), -1, "interior pointer");
	cr_assert(l_owns(p) && l_owns(p + n - 1), "its own block");
	if (((uintptr_t)(p + ((size_t)100 << 20)) & (HZ_CHUNK_SIZE - 1)) != 0)
		cr_assert_not(l_owns(p + ((size_t)100 << 20)),
			      "past the mapping, in its last slot: not ours");
	cr_assert_eq(l_free(p), 0);
	cr_assert_eq(l_free(p), -1, "double free");
	cr_assert_eq(l_usable(p), 0);
	unsigned char *q = hz_large_alloc(n - 12345, 1);
	cr_assert_eq(q, p, "the cached mapping is reused");
	cr_assert(all_bytes(q, n - 12345, 0, &bad), "recycled calloc: byte %zu not zero", bad);
	cr_assert_eq(l_free(q), 0);
	/* A block much smaller takes the cached mapping cut to size: its
	 * tail is unmapped and no longer the arenas'. */
	unsigned char *s = hz_large_alloc((size_t)40 << 20, 1);
	cr_assert_eq(s, p, "the cached mapping is cut and reused");
	cr_assert_eq(l_usable(s), (size_t)40 << 20);
	cr_assert(all_bytes(s, (size_t)40 << 20, 0, &bad), "byte %zu not zero", bad);
	cr_assert(l_owns(s + ((size_t)40 << 20) - 1));
	cr_assert_not(l_owns(s + ((size_t)40 << 20)), "the cut tail");
	cr_assert_not(l_owns(s + ((size_t)64 << 20)), "a slot wholly past the cut");
	l_free(s);
	/* The cache keeps at most HZ_HUGE_CACHE bytes an arena. */
	unsigned char *b[6];
	for (int i = 0; i < 6; i++)
		cr_assert_not_null(b[i] = hz_large_alloc((size_t)256 << 20, 0));
	for (int i = 0; i < 6; i++)
		cr_assert_eq(l_free(b[i]), 0);
	struct hz_large_stats st;
	hz_large_stats(&st);
	cr_assert_leq(st.huge_cached_bytes, hz_budget_dirty_max, "one thread, one arena");
	cr_assert_gt(st.huge_cached_bytes, 0);
	cr_assert_eq(st.allocated_bytes, 0);
	/* malloc_trim unmaps the cached blocks too. */
	cr_assert_geq(hz_large_trim(), st.huge_cached_bytes);
	hz_large_stats(&st);
	cr_assert_eq(st.huge_cached_bytes, 0);
}

Test(large, calloc_zero_after_dirty_frees_and_trim)
{
	struct hz_large_stats s0, s1;
	hz_large_stats(&s0);
	unsigned char *p = hz_large_alloc((size_t)8 << 20, 1);
	cr_assert_not_null(p);
	size_t bad;
	cr_assert(all_bytes(p, (size_t)8 << 20, 0, &bad));
	hz_large_stats(&s1);
	cr_assert_geq(s1.calloc_bytes_known_zero - s0.calloc_bytes_known_zero, (size_t)8 << 20,
		      "fresh pages were cleared again");
	memset(p, 0xEE, (size_t)8 << 20);
	cr_assert_eq(l_free(p), 0);
	unsigned char *q = hz_large_alloc((size_t)8 << 20, 1);
	cr_assert_eq(q, p, "the freed run is reused first");
	cr_assert(all_bytes(q, (size_t)8 << 20, 0, &bad), "calloc returned a non-zero byte at %zu", bad);
	memset(q, 0xEE, (size_t)8 << 20);
	cr_assert_eq(l_free(q), 0);
	cr_assert_geq(hz_large_trim(), (size_t)8 << 20);
	unsigned char *r = hz_large_alloc((size_t)8 << 20, 1);
	cr_assert(all_bytes(r, (size_t)8 << 20, 0, &bad));
	l_free(r);
}

/* Threads allocate, calloc, write and free at once; each checks that its
 * calloc'd blocks are zero and that its own bytes survive the others. */
static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	enum { LIVE = 16 };
	unsigned char *blk[LIVE] = {0};
	size_t len[LIVE] = {0};
	unsigned char tag = (unsigned char)(0x40 + seed);
	for (int step = 0; step < 1500; step++) {
		int k = (int)(rand_r(&seed) % LIVE);
		if (blk[k]) {
			size_t bad;
			if (!all_bytes(blk[k], len[k], tag, &bad) || l_free(blk[k]))
				return (void *)1;
			blk[k] = NULL;
			continue;
		}
		size_t n = 1 + (size_t)rand_r(&seed) % ((size_t)1 << (12 + rand_r(&seed) % 10));
		int zero = rand_r(&seed) & 1;
		unsigned char *p = hz_large_alloc(n, zero);
		if (!p)
			return (void *)2;
		size_t bad;
		if (zero && !all_bytes(p, n, 0, &bad))
			return (void *)3;
		memset(p, tag, n);
		blk[k] = p;
		len[k] = n;
	}
	for (int k = 0; k < LIVE; k++)
		if (blk[k] && l_free(blk[k]))
			return (void *)4;
	return NULL;
}

Test(large, threads, .timeout = 120)
{
	enum { T = 4 };
	pthread_t t[T];
	for (int i = 0; i < T; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)), 0);
	for (int i = 0; i < T; i++) {
		void *r;
		pthread_join(t[i], &r);
		cr_assert_null(r, "thread %d failed with %p", i, r);
	}
	struct hz_large_stats s;
	hz_large_stats(&s);
	cr_assert_eq(s.allocated_bytes, 0, "%zu bytes still counted as allocated", s.allocated_bytes);
	cr_assert_leq(s.chunks, 2 * HZ_ARENAS, "%zu chunks for at most 16 x 2 MiB live per thread", s.chunks);
}

Test(large, realloc_in_place_moved_and_refused)
{
	size_t bad;
	unsigned char *p = hz_large_alloc(10 * HZ_PAGE, 0);
	memset(p, 0x21, 10 * HZ_PAGE);
	/* Grows in place while the pages after it are free. */
	cr_assert_eq(l_realloc(p, 30 * HZ_PAGE), p);
	cr_assert_eq(l_usable(p), 30 * HZ_PAGE);
	cr_assert(all_bytes(p, 10 * HZ_PAGE, 0x21, &bad));
	/* Shrinks in place; the tail is free again. */
	cr_assert_eq(l_realloc(p, 5 * HZ_PAGE + 1), p);
	cr_assert_eq(l_usable(p), 6 * HZ_PAGE);
	unsigned char *blocker = hz_large_alloc(HZ_PAGE, 0);
	cr_assert_eq(blocker, p + 6 * HZ_PAGE, "the freed tail is reused");
	/* Blocked: moved, contents kept, the old block freed. */
	unsigned char *q = l_realloc(p, 40 * HZ_PAGE);
	cr_assert_not_null(q);
	cr_assert_neq(q, p);
	cr_assert(all_bytes(q, 5 * HZ_PAGE, 0x21, &bad));
	cr_assert_eq(l_usable(p), 0);
	/* Into a huge block and between huge sizes: the kernel moves it. */
	memset(q, 0x33, 40 * HZ_PAGE);
	unsigned char *h = l_realloc(q, (size_t)40 << 20);
	cr_assert_not_null(h);
	cr_assert(all_bytes(h, 40 * HZ_PAGE, 0x33, &bad));
	memset(h, 0x44, (size_t)40 << 20);
	unsigned char *h2 = l_realloc(h, (size_t)200 << 20);
	cr_assert_not_null(h2);
	cr_assert_eq(l_usable(h2), (size_t)200 << 20);
	cr_assert(all_bytes(h2, (size_t)40 << 20, 0x44, &bad), "moved bytes lost at %zu", bad);
	memset(h2 + ((size_t)40 << 20), 0x55, (size_t)160 << 20); /* the new part is writable */
	if (h2 != h)
		cr_assert_eq(l_usable(h), 0);
	/* Back into a chunk. */
	unsigned char *s = l_realloc(h2, 3 * HZ_PAGE);
	cr_assert(all_bytes(s, 3 * HZ_PAGE, 0x44, &bad));
	/* An interior pointer is no live block: realloc's caller reports it
	 * (usable size 0, owner found), and a free refuses it. */
	cr_assert(l_owns(s + HZ_PAGE));
	cr_assert_eq(l_usable(s + HZ_PAGE), 0);
	cr_assert_eq(l_free(s + HZ_PAGE), -1);
	errno = 0;
	cr_assert_null(l_realloc(s, HZ_HUGE_MAX + 1));
	cr_assert_eq(errno, ENOMEM);
	cr_assert_eq(l_usable(s), 3 * HZ_PAGE, "a refused realloc changed the block");
	l_free(s);
	l_free(blocker);
}

/* A child forked while other threads allocate can allocate: no lock is
 * left held by a thread the child does not have. */
static volatile int stop_churn;

static void *churn(void *arg)
{
	(void)arg;
	while (!stop_churn) {
		void *p = hz_large_alloc((size_t)1 << 20, 1);
		if (p)
			l_free(p);
	}
	return NULL;
}

/* Pages of [p, p + n) in memory. */
static size_t resident_pages(const unsigned char *p, size_t n)
{
	static unsigned char v[(64 << 20) / 4096];
	size_t got = 0, np = n / HZ_PAGE;
	cr_assert_leq(np, sizeof v);
	cr_assert_eq(mincore((void *)p, n, v), 0);
	for (size_t i = 0; i < np; i++)
		got += v[i] & 1;
	return got;
}

/* A buffer grown by realloc past its block leaves nothing behind the
 * first time: its old block, the only one of its size class taken, goes
 * back at once (its whole 2 MiB pages). Grown so again, the old block of
 * that size is kept for the next (memory the program takes again). The
 * buffer starts at 4 MiB and grows to 8 MiB in place first: a size
 * reached in place counts as taken too. */
Test(large, realloc_grown_leaves_nothing_behind, .timeout = 60)
{
	hz_budget_decay_ns = (uint64_t)60 * 1000000000u;
	size_t n = (size_t)8 << 20, big = (size_t)40 << 20;
	for (int round = 0; round < 2; round++) {
		unsigned char *p = hz_large_alloc(n / 2, 0);
		cr_assert_not_null(p);
		cr_assert_not_null(hz_chunk_of(p), "a 4 MiB block comes from a chunk");
		cr_assert_eq(l_realloc(p, n), p, "round %d: 4 to 8 MiB not in place", round);
		memset(p, 0x3C, n);
		unsigned char *q = l_realloc(p, big); /* past a chunk's largest run: moved */
		cr_assert_not_null(q);
		cr_assert_neq(q, p);
		size_t bad;
		cr_assert(all_bytes(q, n, 0x3C, &bad), "byte %zu not moved", bad);
		/* The whole huge pages of the old block: at least 3 of its 4. */
		unsigned char *lo = (unsigned char *)hz_round_up((uintptr_t)p, HZ_HUGE_SIZE);
		size_t whole = (size_t)(p + n - lo) / HZ_HUGE_SIZE * HZ_HUGE_SIZE;
		size_t in = resident_pages(lo, whole);
		if (round == 0)
			cr_assert_eq(in, 0, "%zu pages of the old block still in memory", in);
		else
			cr_assert_eq(in, whole / HZ_PAGE, "the old block of a size taken again was released (%zu of %zu in memory)",
				     in, whole / HZ_PAGE);
		cr_assert_eq(l_free(q), 0);
	}
}

Test(large, fork_while_threads_allocate, .timeout = 60)
{
	/* One thread per arena: the child's thread shares an arena with one
	 * of them, whose lock it would wait for forever without the fork
	 * handlers. */
	pthread_t t[HZ_ARENAS];
	for (int i = 0; i < HZ_ARENAS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, churn, NULL), 0);
	for (int k = 0; k < 30; k++) {
		pid_t pid = fork();
		cr_assert_neq(pid, -1);
		if (pid == 0) {
			alarm(10); /* a deadlock fails the test, it does not hang it */
			for (int i = 0; i < 20; i++) {
				void *p = hz_large_alloc((size_t)(i + 1) << 16, i & 1);
				if (!p || l_free(p))
					_exit(1);
			}
			_exit(0);
		}
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %#x", k, st);
	}
	stop_churn = 1;
	for (int i = 0; i < HZ_ARENAS; i++)
		pthread_join(t[i], NULL);
}

/* A freed chunk block up to HZ_RUN_KEEP_MAX, of the length its arena
 * handed out last, is kept whole for the next malloc of its length: that
 * malloc takes it as the program left it, a calloc never does; freed, it
 * is no longer live; the arena keeps HZ_RUN_KEEP at most, within the
 * budget, and none with a decay of 0; a trim frees them. */
Test(large, kept_blocks_taken_again_whole)
{
	const size_t n = (size_t)1 << 20;
	hz_budget_dirty_max = (size_t)1 << 30; /* not the environment's: no release meanwhile */
	hz_budget_decay_ns = (uint64_t)60 * 1000000000u;
	struct hz_large_stats s0, s;
	unsigned char *p = written_and_freed(n, 0x5A, &s0, &s);
	cr_assert_eq(s.kept_bytes, n);
	cr_assert_geq(s.dirty_free_bytes, n, "kept bytes are free memory in memory");
	cr_assert_eq(s.allocated_bytes, s0.allocated_bytes);
	cr_assert_eq(l_usable(p), 0, "a kept block is not live");
	cr_assert_eq(l_free(p), -1, "a kept block freed again");
	cr_assert_null(l_realloc(p, 2 * n));
	size_t bad;
	unsigned char *z = hz_large_alloc(n, 1);
	cr_assert_not_null(z);
	cr_assert_neq(z, p, "a calloc took a kept block");
	cr_assert(all_bytes(z, n, 0, &bad), "calloc returned a non-zero byte at %zu", bad);
	unsigned char *other = hz_large_alloc(n + HZ_PAGE, 0);
	cr_assert_neq(other, p, "a kept block of another length taken");
	unsigned char *q = hz_large_alloc(n, 0);
	cr_assert_eq(q, p, "the kept block was not taken again");
	cr_assert(all_bytes(q, n, 0x5A, &bad), "its byte %zu changed while kept", bad);
	cr_assert_eq(l_usable(q), n);
	hz_large_stats(&s);
	cr_assert_eq(s.kept_bytes, 0);
	cr_assert_eq(s.kept_taken, s0.kept_taken + 1);
	cr_assert_eq(hz_arenas_held(), hz_arenas_free_bytes(), "the free memory published drifted");
	/* HZ_RUN_KEEP at most, HZ_RUN_KEEP_BYTES in all; the oldest go. */
	for (int i = 0; i < HZ_RUN_KEEP + 2; i++) {
		unsigned char *b = hz_large_alloc(HZ_PAGE * (size_t)(i + 1), 0);
		cr_assert_not_null(b);
		cr_assert_eq(l_free(b), 0);
	}
	hz_large_stats(&s);
	size_t newest = 0;
	for (int i = 2; i < HZ_RUN_KEEP + 2; i++)
		newest += HZ_PAGE * (size_t)(i + 1);
	cr_assert_eq(s.kept_bytes, newest, "%zu bytes kept", s.kept_bytes);
	void *again = hz_large_alloc(HZ_PAGE, 0); /* the oldest's length: it went back to its chunk */
	cr_assert_not_null(again);
	struct hz_large_stats s2;
	hz_large_stats(&s2);
	cr_assert_eq(s2.kept_taken, s.kept_taken, "the oldest stayed kept");
	cr_assert_eq(l_free(again), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(l_free(i == 0 ? q : i == 1 ? z : other), 0);
	hz_large_stats(&s);
	cr_assert_leq(s.kept_bytes, HZ_RUN_KEEP_BYTES);
	/* Only a block of the length the arena handed out last: a program
	 * that grows its blocks would not take it again. */
	unsigned char *older = hz_large_alloc(n, 0), *newer = hz_large_alloc(n + HZ_PAGE, 0);
	cr_assert(older && newer);
	size_t before = s.kept_bytes;
	cr_assert_eq(l_free(older), 0);
	hz_large_stats(&s);
	cr_assert_eq(s.kept_bytes, before, "a block of another length than the last kept");
	cr_assert_eq(l_free(newer), 0);
	hz_large_stats(&s);
	/* A trim frees them into their chunks, and releases them. */
	cr_assert_geq(hz_large_trim(), s.kept_bytes);
	hz_large_stats(&s);
	cr_assert_eq(s.kept_bytes, 0);
	cr_assert_eq(hz_arenas_held(), hz_arenas_free_bytes(), "the free memory published drifted");
	/* Over the budget, a block is freed as before; and with a decay of 0
	 * (free memory released at once). */
	size_t budget = hz_budget_dirty_max;
	hz_budget_dirty_max = 0;
	p = hz_large_alloc(n, 0);
	memset(p, 0x5B, n);
	cr_assert_eq(l_free(p), 0);
	hz_large_stats(&s);
	hz_budget_dirty_max = budget;
	cr_assert_eq(s.kept_bytes, 0, "kept over the budget");
	hz_budget_decay_ns = 0;
	p = hz_large_alloc(n, 0);
	memset(p, 0x5C, n);
	cr_assert_eq(l_free(p), 0);
	hz_large_stats(&s);
	cr_assert_eq(s.kept_bytes, 0, "kept with a decay of 0");
}

/* An aligned malloc takes a kept block only on its alignment. */
Test(large, kept_block_aligned_or_not_taken)
{
	const size_t n = (size_t)1 << 20;
	unsigned char *p = hz_large_alloc_aligned(n, HZ_PAGE, 0);
	unsigned char *q = (uintptr_t)p % HZ_HUGE_SIZE ? p : hz_large_alloc_aligned(n, HZ_PAGE, 0);
	cr_assert_not_null(q);
	if (q != p)
		cr_assert_eq(l_free(p), 0);
	if ((uintptr_t)q % HZ_HUGE_SIZE == 0)
		cr_skip_test("no block off a huge page's alignment");
	cr_assert_eq(l_free(q), 0);
	unsigned char *r = hz_large_alloc_aligned(n, HZ_HUGE_SIZE, 0);
	cr_assert_not_null(r);
	cr_assert_eq((uintptr_t)r % HZ_HUGE_SIZE, 0);
	cr_assert_neq(r, q);
	cr_assert_eq(hz_large_alloc_aligned(n, HZ_PAGE, 0), q);
}

/* Frees that run the decay's pass: a block kept whole runs it at every
 * HZ_RUN_KEEP_TICK-th. */
static void decay_pass(void)
{
	for (int i = 0; i < HZ_RUN_KEEP_TICK; i++)
		cr_assert_eq(l_free(hz_large_alloc(HZ_PAGE, 0)), 0);
}

/* Free dirty memory is bounded: over the budget, whole free 2 MiB blocks
 * are released at the next free; and at the end of each window of the
 * delay, what stayed free all through it: what the program took again
 * meanwhile is kept for the next window. */
Test(large, dirty_memory_bounded_by_budget_and_delay, .timeout = 60)
{
	hz_budget_dirty_max = (size_t)8 << 20;
	hz_budget_decay_ns = (uint64_t)60 * 1000000000u;
	unsigned char *b[8];
	for (int i = 0; i < 8; i++) {
		b[i] = hz_large_alloc((size_t)2 << 20, 0);
		cr_assert_not_null(b[i]);
		memset(b[i], 0x66, (size_t)2 << 20);
	}
	for (int i = 0; i < 8; i++)
		cr_assert_eq(l_free(b[i]), 0);
	struct hz_large_stats s;
	hz_large_stats(&s);
	cr_assert_leq(s.dirty_free_bytes, hz_budget_dirty_max, "%zu dirty bytes kept", s.dirty_free_bytes);
	cr_assert_gt(s.purged_bytes, 0);
	hz_budget_dirty_max = (size_t)1 << 30;
	hz_budget_decay_ns = 50 * 1000000u;
	usleep(60 * 1000);
	decay_pass(); /* a window ends, another begins */
	unsigned char *p = hz_large_alloc((size_t)4 << 20, 0);
	memset(p, 0x67, (size_t)4 << 20);
	l_free(p);
	usleep(60 * 1000);
	decay_pass();
	hz_large_stats(&s);
	cr_assert_geq(s.dirty_free_bytes, (size_t)4 << 20, "%zu dirty bytes: the 4 MiB taken in the window went",
		      s.dirty_free_bytes);
	usleep(60 * 1000);
	decay_pass();
	hz_large_stats(&s);
	cr_assert_lt(s.dirty_free_bytes, (size_t)2 << 20, "%zu dirty bytes outlived a window unused",
		     s.dirty_free_bytes);
}

/* Over budget, the least recently freed memory goes first: chunk pages
 * freed long ago are released, the huge block freed just now stays cached
 * and serves the next request of its size. */
Test(large, over_budget_the_least_recently_freed_goes_first, .timeout = 60)
{
	hz_budget_dirty_max = (size_t)64 << 20;
	hz_budget_decay_ns = (uint64_t)60 * 1000000000u;
	unsigned char *b[5];
	for (int i = 0; i < 5; i++) {
		b[i] = hz_large_alloc((size_t)8 << 20, 0);
		cr_assert_not_null(b[i]);
		memset(b[i], 0x31, (size_t)8 << 20);
	}
	for (int i = 0; i < 5; i++)
		cr_assert_eq(l_free(b[i]), 0);
	struct hz_large_stats s0, s1;
	hz_large_stats(&s0);
	size_t n = (size_t)48 << 20;
	unsigned char *h = hz_large_alloc(n, 0);
	cr_assert_not_null(h);
	memset(h, 0x32, n);
	cr_assert_eq(l_free(h), 0); /* 40 + 48 MiB dirty: over budget */
	hz_large_stats(&s1);
	cr_assert_eq(s1.huge_cached_bytes, n, "the block freed last was dropped");
	cr_assert_gt(s1.purged_bytes, s0.purged_bytes, "older chunk pages were kept");
	cr_assert_leq(s1.dirty_free_bytes, hz_budget_dirty_max);
	cr_assert_eq(hz_large_alloc(n, 1), h, "the cached block serves again");
	l_free(h);
	hz_large_trim();
}

/* The window: chunks and huge blocks inside it, a pointer outside it known
 * foreign with no lookup; with the window taken by another mapping, the
 * arenas map elsewhere and the window widens to every address, so their
 * blocks are still found as theirs. */
static int take(void *at, size_t size)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE;
	return mmap(at, size, PROT_NONE, flags, -1, 0) == at;
}

Test(large, window_used_and_widened_when_taken)
{
	void *c = hz_large_alloc(100000, 0), *h = hz_large_alloc((size_t)40 << 20, 0);
	cr_assert(c && h);
	cr_assert(hz_reg_in_window(c) && hz_reg_in_window(h), "%p %p outside the window", c, h);
	int local;
	void *heap = malloc(64);
	cr_assert(!hz_reg_in_window(&local) && !hz_reg_in_window(heap) && !hz_reg_in_window(NULL));
	cr_assert_eq(l_free(c), 0);
	cr_assert_eq(l_free(h), 0);

	/* Everything the window holds is the arenas' (unmapped or cached):
	 * take the rest of it, then ask for more than the cache holds. */
	unsigned char *lo = (unsigned char *)HZ_REG_WINDOW_LO, *hi = lo + HZ_REG_WINDOW;
	size_t taken = 0;
	for (unsigned char *at = lo; at < hi; at += (size_t)1 << 36) {
		if (take(at, (size_t)1 << 36))
			taken++;
		else /* a piece the arenas use: by chunks */
			for (size_t off = 0; off < (size_t)1 << 36; off += HZ_CHUNK_SIZE)
				taken += take(at + off, HZ_CHUNK_SIZE);
	}
	cr_assert(taken > 0);
	void *blocks[4];
	for (int i = 0; i < 4; i++) {
		blocks[i] = hz_large_alloc((size_t)(100 + i) << 20, 0);
		cr_assert_not_null(blocks[i]);
		memset(blocks[i], 1, 4096);
		cr_assert(hz_reg_in_window(blocks[i]) && l_owns(blocks[i]));
	}
	cr_assert(hz_reg_in_window(heap), "the window did not widen");
	cr_assert(!l_owns(heap));
	for (int i = 0; i < 4; i++)
		cr_assert_eq(l_free(blocks[i]), 0);
	free(heap);
}

/* Hardened mode: a chunk block's guard span, given back at its free, is
 * counted as what it is, zero and not in memory (fresh), not as clean
 * pages in memory; the block's own pages, cleared at free, are clean. */
Test(large, hardened_guard_span_freed_fresh)
{
	hz_hardened_setup(1);
	size_t body = (size_t)4 << 20, span = HZ_HUGE_SIZE;
	unsigned char *p = hz_large_alloc(body, 0);
	cr_assert_not_null(p);
	struct hz_owner o = hz_large_owner(p);
	cr_assert_not_null(o.chunk, "a %zu MiB block with its span comes from a chunk", body >> 20);
	cr_assert_eq(l_usable(p), body);
	memset(p, 0x5A, body);
	struct hz_chunk *c = o.chunk;
	size_t i = (size_t)(p - c->base) >> HZ_PAGE_SHIFT, nb = body >> HZ_PAGE_SHIFT, ns = span >> HZ_PAGE_SHIFT;
	cr_assert_eq(l_free(p), 0);
	cr_assert_eq(hz_bits_count(c->clean, i, i + nb), nb, "the block's pages are clean");
	cr_assert_eq(hz_bits_count(c->clean, i + nb, i + nb + ns), 0, "the span counted clean");
	cr_assert_eq(hz_bits_count(c->dirty, i + nb, i + nb + ns), 0, "the span counted dirty");
	unsigned char v[512];
	cr_assert_eq(mincore(p + body, span, v), 0);
	for (size_t k = 0; k < ns; k++)
		cr_assert_eq(v[k] & 1, 0, "page %zu of the span is in memory", k);
}

/* Hardened mode's clear at free, on a block that starts and ends off a
 * huge page's edge: the 2 MiB steps (cut at huge page edges) holding a
 * page in memory are cleared, the others left out of memory, the last
 * ones too; everything is cleared where swap is configured. */
Test(large, hardened_clear_leaves_steps_not_in_memory)
{
	const size_t step = HZ_HUGE_SIZE, span = 22 * step;
	void *m;
	cr_assert_eq(hz_os_map(span, step, &m), 0);
	cr_assert_eq(hz_os_nohugepage(m, span), 0);
	unsigned char *p = (unsigned char *)m + 3 * HZ_PAGE, *e = (unsigned char *)m + 20 * step - 5 * HZ_PAGE;
	/* Steps: [p, 1 step) partial, then whole ones up to the 19th, partial. */
	size_t touched[] = {0, 4, 5, 6, 13}; /* by step of m */
	for (size_t i = 0; i < sizeof touched / sizeof touched[0]; i++)
		((unsigned char *)m)[touched[i] * step + 7 * HZ_PAGE] = 0x77;
	p[0] = 0x66; /* the partial first step */
	hz_hardened_clear(p, (size_t)(e - p), 1);
	int swap = hz_os_swap_possible();
	static unsigned char v[22 * 512];
	cr_assert_eq(mincore(m, span, v), 0);
	for (size_t s = 0; s < 20; s++) {
		int written = s == 0 || s == 4 || s == 5 || s == 6 || s == 13;
		size_t in = 0;
		for (size_t k = s * 512; k < (s + 1) * 512; k++)
			in += v[k] & 1;
		if (written || swap)
			cr_assert_gt(in, 0, "step %zu not cleared", s);
		else
			cr_assert_eq(in, 0, "step %zu, never written, faulted in: %zu pages", s, in);
	}
	size_t bad;
	cr_assert(all_bytes(p, (size_t)(e - p), 0, &bad), "byte %zu", bad);
	cr_assert_eq(hz_os_unmap(m, span), 0);
}

/* A huge block released (a decay of 0) keeps its mapping: the next
 * calloc and malloc that fit take its addresses, all zero, with no
 * mapping made; one much smaller maps fresh; malloc_trim unmaps it; in
 * hardened mode none is kept. */
static void retained_round(int retain)
{
	size_t n = (size_t)96 << 20, bad;
	hz_budget_dirty_max = (size_t)1 << 30;
	hz_budget_decay_ns = 0;
	hz_budget_retain = retain;
	struct hz_large_stats s0, s;
	unsigned char *p = written_and_freed(n, 0xAA, &s0, &s);
	cr_assert_eq(s.huge_cached_bytes, 0, "released at once");
	if (!retain) {
		cr_assert_eq(s.retained_bytes, 0);
		cr_assert_not(hz_os_mapped(p), "unmapped");
		return;
	}
	cr_assert_eq(s.retained_bytes, n, "retained, mapped whole huge pages");
	cr_assert(hz_os_mapped(p) && !hz_os_resident(p), "mapped, its pages gone");
	unsigned char *q = hz_large_alloc(n - 12345, 1);
	cr_assert_eq(q, p, "the retained addresses taken");
	cr_assert(all_bytes(q, n - 12345, 0, &bad), "calloc at retained addresses: byte %zu not zero", bad);
	hz_large_stats(&s);
	cr_assert_eq(s.retained_taken, s0.retained_taken + 1);
	cr_assert_eq(s.retained_bytes, 0);
	memset(q, 0x55, n - 12345);
	cr_assert_eq(l_free(q), 0);
	unsigned char *r = hz_large_alloc((size_t)40 << 20, 0); /* not a quarter of it: not taken */
	cr_assert_neq(r, p, "a much smaller block maps fresh");
	cr_assert(all_bytes(p + 4096, 4096, 0, &bad), "still retained, zero");
	cr_assert_eq(l_free(r), 0);
	hz_large_trim();
	hz_large_stats(&s);
	cr_assert_eq(s.retained_bytes, 0);
	cr_assert_not(hz_os_mapped(p), "malloc_trim unmaps it");
}

Test(large, released_huge_blocks_retained, .timeout = 60)
{
	retained_round(1);
	retained_round(0);
}
