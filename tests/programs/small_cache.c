/* The small blocks' thread cache (allocator/small_cache.c), run preloaded
 * by small_cache.sh, each case also under glibc (the program's own checks
 * must hold there too; the library's counters and region are asked only
 * where hz_stat is found):
 *
 *   small_cache where          prints "cached" when a 64 B block, after
 *                              20000 calls, lies in the cache's region,
 *                              else "not cached"
 *   small_cache remote         2 producers, 2 consumers: batches of
 *                              blocks of 1 B-64 KiB, each tagged through
 *                              its usable size, checked and freed by
 *                              another thread; calloc's whole usable
 *                              size read zero
 *   small_cache exits          2000 threads, each taking 300 blocks and
 *                              handing 100 to the next: the exited
 *                              threads' blocks come back (the resident
 *                              set does not grow with the threads)
 *   small_cache counts         malloc.small.calls counts the cache's,
 *                              each call once; malloc.small.large_calls
 *                              its calls of 16-64 KiB and of 200 KiB
 *                              (a big class: the block in the region),
 *                              and malloc.small.calls not those; of big
 *                              blocks freed, those up to 1 MiB are
 *                              taken again without a fill
 *   small_cache aligned        memalign, posix_memalign and aligned_alloc
 *                              of 8-64 B alignments: each block aligned,
 *                              whole, and those of 8 and 16 B the cache's
 *   small_cache trim           malloc_trim gives the cached blocks back,
 *                              of small, large and big classes
 *   small_cache fork           forks while threads allocate; the child
 *                              allocates, frees and counts
 *   small_cache blocked        the region taken by another mapping before
 *                              the cache starts: every size is served,
 *                              outside it
 *   small_cache resize         blocks of 16 KiB-1 MiB realloc'ed in
 *                              place (shrunk or grown) and freed: a
 *                              later malloc of their old size gets a
 *                              block of its size
 *   small_cache lastround      threads whose only calls are made in a
 *                              key destructor of glibc's last round,
 *                              and others after them on their stacks:
 *                              the counts stay readable and go on
 *   small_cache tcaches        threads of 16 calls make no jemalloc
 *                              thread cache (malloc.small.thread_tcaches),
 *                              threads of 4000 one each, threads whose
 *                              first call is 100 KiB one each, a thread
 *                              of reallocs one, a thread freeing 300 of
 *                              another's blocks of 100 KiB none; a thread
 *                              of 4 calls reads thread.tcache.enabled
 *                              and opt.tcache true, and flushes
 *   small_cache tcaches_eager  the same threads make none of the cache's
 *                              (run with MALLOC_CONF set: jemalloc's own)
 *   small_cache tcaches_lone   each thread makes one at its first call
 *                              (run where the cache is refused, the
 *                              program's MALLOC_CONF unset)
 *   small_cache warm           a thread's blocks are jemalloc's until
 *                              it has asked for 256 KiB (166 KiB in 140
 *                              calls are not, 286 KiB in 170 are), or,
 *                              once the process has the cache's arena,
 *                              until its 256th call (a thread of 100
 *                              calls not, of 300 yes); a caching thread,
 *                              and one of 300 frees, flush a jemalloc
 *                              thread cache of their own
 *   small_cache ctl_refused    mallctl answers EAGAIN, on the main
 *                              thread and another (run where jemalloc
 *                              cannot start)
 * Exit 0, or 1 and what failed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAIL(...) (printf(__VA_ARGS__), printf("\n"), exit(1))
/* allocator/allocator.h's HZ_CACHE_BASE and HZ_CACHE_SPAN, as the
 * library places the region. */
#define BASE ((uintptr_t)1 << 45)
#define SPAN ((uintptr_t)1 << 40)

static int (*stat_fn)(const char *, uint64_t *);

static uint64_t stat(const char *name)
{
	uint64_t v = 0;
	if (stat_fn && stat_fn(name, &v))
		FAIL("hz_stat(%s) failed", name);
	return v;
}

static int cached(const void *p)
{
	return (uintptr_t)p - BASE < SPAN;
}

static unsigned char tag(const void *p, size_t i)
{
	return (unsigned char)(((uintptr_t)p >> 4) + i);
}

/* A size the cache serves: up to 1 KiB, one in eight up to 64 KiB, one
 * in 4096 up to 1 MiB (its big classes). */
static size_t any_size(unsigned *seed)
{
	unsigned r = (unsigned)rand_r(seed);
	return r & 7 ? 1 + r % 1024 : (r >> 3) & 511 ? 1 + r % 65536 : 1 + r % ((1u << 20) - 1);
}

static unsigned char *get(size_t n)
{
	unsigned char *p = malloc(n);
	if (!p)
		FAIL("malloc(%zu) failed", n);
	size_t u = malloc_usable_size(p);
	if (u < n)
		FAIL("malloc_usable_size %zu < %zu", u, n);
	for (size_t i = 0; i < u; i++)
		p[i] = tag(p, i);
	return p;
}

static void check_put(unsigned char *p)
{
	size_t u = malloc_usable_size(p);
	for (size_t i = 0; i < u; i++)
		if (p[i] != tag(p, i))
			FAIL("block %p: byte %zu of %zu changed", (void *)p, i, u);
	free(p);
}

/* A thread's first calls go to jemalloc (small_cache.c's WARM, 16384):
 * these make the calling thread's cache start. */
static void warm(void)
{
	for (int i = 0; i < 20000; i++)
		free(malloc(64));
}

static long rss_kib(void)
{
	char buf[4096];
	FILE *f = fopen("/proc/self/status", "r");
	long v = -1;
	if (!f)
		FAIL("no /proc/self/status");
	while (fgets(buf, sizeof buf, f))
		if (sscanf(buf, "VmRSS: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* ---- remote ---- */

#define BATCH 1000
struct batch {
	struct batch *next;
	unsigned char *b[BATCH];
};
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct batch *queue;
static int made, taken, total = 2000;

static void *producer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		int go = made < total;
		made += go;
		pthread_mutex_unlock(&lock);
		if (!go)
			return NULL;
		struct batch *b = malloc(sizeof *b);
		if (!b)
			FAIL("malloc failed");
		for (int i = 0; i < BATCH; i++) {
			size_t n = any_size(&seed);
			if (i % 7 == 0) {
				unsigned char *z = calloc(1, n);
				if (!z)
					FAIL("calloc failed");
				size_t u = malloc_usable_size(z);
				for (size_t k = 0; k < u; k++)
					if (z[k])
						FAIL("calloc(%zu): byte %zu of %zu not zero", n, k, u);
				free(z);
			}
			b->b[i] = get(n);
		}
		pthread_mutex_lock(&lock);
		b->next = queue;
		queue = b;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!queue && taken < total)
			pthread_cond_wait(&cond, &lock);
		struct batch *b = queue;
		if (b) {
			queue = b->next;
			taken++;
		}
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
		if (!b)
			return NULL;
		for (int i = 0; i < BATCH; i++)
			check_put(b->b[i]);
		free(b);
	}
}

static void remote(void)
{
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, i & 1 ? consumer : producer, (void *)(i + 1)))
			FAIL("pthread_create");
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* ---- exits ---- */

static unsigned char *handed[100];

static void *brief(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	unsigned char *mine[300];
	warm();
	for (int i = 0; i < 300; i++)
		mine[i] = get(any_size(&seed));
	for (int i = 0; i < 100; i++) { /* the previous thread's, freed here */
		if (handed[i])
			check_put(handed[i]);
		handed[i] = mine[i];
	}
	for (int i = 100; i < 300; i++)
		check_put(mine[i]);
	return NULL;
}

static void run_brief(int from, int to)
{
	for (int i = from; i < to; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, brief, (void *)(uintptr_t)(i + 1)) || pthread_join(t, NULL))
			FAIL("pthread_create");
	}
}

static void exits(void)
{
	uint64_t flushed = stat("malloc.small.cache_flushed");
	run_brief(0, 200);
	long early = rss_kib();
	run_brief(200, 2000);
	long late = rss_kib();
	/* Each thread takes up to 300 KiB; kept, 1800 more threads' blocks
	 * would be about 500 MiB. */
	if (late - early > 32 * 1024)
		FAIL("resident set grew by %ld KiB over 1800 threads", late - early);
	if (stat_fn && stat("malloc.small.cache_flushed") <= flushed)
		FAIL("no block given back at the threads' exits");
	printf("resident %ld KiB after 200 threads, %ld after 2000\n", early, late);
}

/* ---- counts ---- */

static void counts(void)
{
	if (!stat_fn)
		return;
	enum { N = 100000 };
	static unsigned char *p[1000];
	warm();
	uint64_t before = stat("malloc.small.calls");
	for (int r = 0; r < N / 1000; r++) {
		for (int i = 0; i < 1000; i++)
			p[i] = get(64);
		for (int i = 0; i < 1000; i++)
			check_put(p[i]);
	}
	/* And N blocks held at once: most come from jemalloc, and each
	 * counts once (not as jemalloc's request and again as the
	 * program's). */
	static unsigned char *q[N];
	for (int i = 0; i < N; i++)
		q[i] = get(64);
	for (int i = 0; i < N; i++)
		check_put(q[i]);
	uint64_t after = stat("malloc.small.calls"), grew = after - before;
	/* jemalloc's own figures lag by what its thread caches hold. */
	if (grew + 2000 < 2 * N || grew > 2 * N + N / 10)
		FAIL("malloc.small.calls grew by %llu over %d calls", (unsigned long long)grew, 2 * N);
	printf("malloc.small.calls grew by %llu over %d calls\n", (unsigned long long)grew, 2 * N);
	/* Blocks of a large class of jemalloc's that the cache serves count
	 * in large_calls, once each, and not in calls. jemalloc's own thread
	 * cache's requests (warm()'s, more than these) count in its figures
	 * when it flushes: flushed first. */
	enum { L = 10000 };
	int (*ctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
	if (!ctl || ctl("thread.tcache.flush", NULL, NULL, NULL, 0))
		FAIL("mallctl(thread.tcache.flush) failed");
	uint64_t small0 = stat("malloc.small.calls"), large0 = stat("malloc.small.large_calls");
	for (int r = 0; r < L / 1000; r++) {
		for (int i = 0; i < 1000; i++)
			p[i] = get(32768);
		for (int i = 0; i < 1000; i++)
			check_put(p[i]);
	}
	uint64_t small = stat("malloc.small.calls") - small0, large = stat("malloc.small.large_calls") - large0;
	if (large + 2000 < L || large > L + L / 10 || small > L / 20)
		FAIL("%d calls of 32 KiB: large_calls grew by %llu, calls by %llu", L, (unsigned long long)large,
		     (unsigned long long)small);
	printf("%d calls of 32 KiB: large_calls grew by %llu, calls by %llu\n", L, (unsigned long long)large,
	       (unsigned long long)small);
	/* And of a big class (200 KiB, past malloc's fast path): the
	 * region's blocks, counted so too. */
	small0 = stat("malloc.small.calls"), large0 = stat("malloc.small.large_calls");
	for (int r = 0; r < L / 10; r++) {
		for (int i = 0; i < 10; i++)
			if (!cached(p[i] = malloc(200 << 10)))
				FAIL("a block of 200 KiB at %p, outside the cache's region", (void *)p[i]);
		for (int i = 0; i < 10; i++)
			free(p[i]);
	}
	small = stat("malloc.small.calls") - small0, large = stat("malloc.small.large_calls") - large0;
	if (large + 100 < L || large > L + L / 10 || small > L / 20)
		FAIL("%d calls of 200 KiB: large_calls grew by %llu, calls by %llu", L, (unsigned long long)large,
		     (unsigned long long)small);
	printf("%d calls of 200 KiB: large_calls grew by %llu, calls by %llu\n", L, (unsigned long long)large,
	       (unsigned long long)small);
	/* A thread keeps the last block it freed of each big class, up to
	 * 1 MiB in all (small_cache.c's BIG_HELD): of blocks of 112, 224,
	 * 320 and 448 KiB freed in that order (1,104 KiB), the first three
	 * are taken again without a fill from jemalloc, twice over. */
	static const size_t big[] = {100 << 10, 200 << 10, 300 << 10, 400 << 10};
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < 4; i++)
			p[i] = get(big[i]);
		for (int i = 0; i < 4; i++)
			check_put(p[i]);
		uint64_t filled = stat("malloc.small.cache_filled");
		for (int i = 0; i < 4; i++)
			p[i] = get(big[i]);
		filled = stat("malloc.small.cache_filled") - filled;
		for (int i = 0; i < 4; i++)
			check_put(p[i]);
		if (stat_fn && filled != 1)
			FAIL("4 blocks of 112-448 KiB freed and taken again: %llu filled, not 1 (round %d)",
			     (unsigned long long)filled, r);
	}
}

/* ---- resize ---- */

/* Blocks of jemalloc's large classes that realloc shrinks or grows in
 * place, then frees: a later malloc of the old size must not get one of
 * them (malloc_usable_size and every byte of it checked by get()). Round
 * r's sizes from sizes(r), nkeep blocks of the old size kept. */
static void resize_rounds(int rounds, void (*sizes)(int, size_t *, size_t *), int nkeep)
{
	static unsigned char *keep[64];
	for (int r = 0; r < rounds; r++) {
		size_t from, to;
		sizes(r, &from, &to);
		unsigned char *p = get(from), *q;
		size_t u = malloc_usable_size(p);
		if (!(q = realloc(p, to)))
			FAIL("realloc(%zu) failed", to);
		for (size_t i = 0; i < (to < u ? to : u); i++)
			if (q[i] != tag(p, i))
				FAIL("realloc from %zu to %zu: byte %zu lost", from, to, i);
		free(q);
		int k = r % nkeep;
		if (keep[k])
			check_put(keep[k]);
		keep[k] = get(from - r % 1000);
	}
	for (int k = 0; k < nkeep; k++) {
		check_put(keep[k]);
		keep[k] = NULL;
	}
}

static void sizes_large(int r, size_t *from, size_t *to)
{
	*from = r & 1 ? 65536 : 40000;
	*to = r & 2 ? 20000 : 90000;
}

/* The big classes (80 KiB-1 MiB): grown and shrunk in place across them
 * and out of them. */
static void sizes_big(int r, size_t *from, size_t *to)
{
	*from = r & 1 ? 200000 : 600000;
	*to = r & 2 ? (r & 4 ? 30000 : 150000) : (r & 4 ? 2000000 : 400000);
}

static void resize(void)
{
	warm();
	resize_rounds(4000, sizes_large, 64);
	resize_rounds(400, sizes_big, 8);
}

/* ---- lastround ---- */

/* A thread whose first calls are in a key destructor of glibc's last
 * round (PTHREAD_DESTRUCTOR_ITERATIONS, 4): its cache's counts must not
 * be read from its TLS once it is gone, nor linked twice when a new
 * thread takes its stack. */
static pthread_key_t round_key;

static void round_destructor(void *arg)
{
	uintptr_t round = (uintptr_t)arg;
	if (round < 4) {
		pthread_setspecific(round_key, (void *)(round + 1));
		return;
	}
	for (int i = 0; i < 20000; i++) {
		volatile unsigned char *p = malloc(64);
		if (!p)
			FAIL("malloc(64) failed in a destructor");
		p[63] = 1;
		free((void *)p);
	}
}

static void *last_round(void *arg)
{
	(void)arg;
	/* jemalloc's thread state made before the thread's exit, through
	 * a path the cache does not serve: a thread whose first call to
	 * jemalloc is in the last round leaves jemalloc's own lists
	 * pointing into its TLS (jemalloc's issue 2351; Debian's
	 * libjemalloc.so.2 alike), which this case is not about. */
	void *p = NULL;
	if (posix_memalign(&p, 64, 64))
		FAIL("posix_memalign");
	free(p);
	pthread_setspecific(round_key, (void *)1);
	return NULL;
}

static void *plain(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++)
		check_put(get(48));
	return NULL;
}

static void lastround(void)
{
	if (pthread_key_create(&round_key, round_destructor))
		FAIL("pthread_key_create");
	for (int r = 0; r < 50; r++) {
		pthread_t t;
		if (pthread_create(&t, NULL, r & 1 ? plain : last_round, NULL) || pthread_join(t, NULL))
			FAIL("pthread_create");
		(void)stat("malloc.small.calls");
	}
	uint64_t before = stat("malloc.small.calls");
	warm();
	for (int i = 0; i < 1000; i++)
		check_put(get(64));
	if (stat_fn && stat("malloc.small.calls") < before + 1000)
		FAIL("malloc.small.calls did not count after the last-round threads");
}

/* ---- aligned ---- */

static void aligned(void)
{
	enum { N = 20000 };
	static unsigned char *p[256];
	unsigned seed = 7;
	warm();
	size_t outside = 0;
	for (int i = 0; i < N; i++) {
		int k = i % 256;
		if (p[k])
			check_put(p[k]);
		size_t a = (size_t)8 << (i % 4), n = any_size(&seed);
		void *q = NULL;
		int form = (i / 4) % 3;
		if (form == 0)
			q = memalign(a, n);
		else if (form == 1 && posix_memalign(&q, a, n))
			q = NULL;
		else if (form == 2)
			q = aligned_alloc(a, (n + a - 1) & ~(a - 1));
		if (!q)
			FAIL("%s(%zu, %zu) failed", form == 0 ? "memalign" : form == 1 ? "posix_memalign" : "aligned_alloc",
			     a, n);
		if ((uintptr_t)q % a)
			FAIL("a block of %zu B aligned to %zu at %p", n, a, q);
		if (malloc_usable_size(q) < n)
			FAIL("malloc_usable_size %zu < %zu", malloc_usable_size(q), n);
		p[k] = q;
		for (size_t j = 0; j < malloc_usable_size(q); j++)
			p[k][j] = tag(q, j);
		outside += a <= 16 && !cached(q);
	}
	for (int k = 0; k < 256; k++)
		check_put(p[k]);
	/* The cache serves an alignment of at most 16 B as malloc's. */
	if (stat_fn && outside)
		FAIL("%zu of the blocks aligned to 8 or 16 B were not the cache's", outside);
	/* And a block freed with its alignment (sdallocx, dallocx: C++'s
	 * sized aligned delete) goes back on the thread's stack, which hands
	 * it out again first. */
	void (*sdallocx_fn)(void *, size_t, int) = (void (*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "sdallocx");
	void (*dallocx_fn)(void *, int) = (void (*)(void *, int))dlsym(RTLD_DEFAULT, "dallocx");
	if (stat_fn && sdallocx_fn && dallocx_fn) {
		for (int i = 0; i < 1000; i++) {
			void *q = memalign(16, 64);
			if (i & 1)
				sdallocx_fn(q, 64, 4); /* MALLOCX_LG_ALIGN(4) */
			else
				dallocx_fn(q, 4);
			void *r = malloc(64);
			if (r != q)
				FAIL("a block freed by %s with its alignment was not the next one handed out",
				     i & 1 ? "sdallocx" : "dallocx");
			free(r);
		}
	}
	printf("%d aligned blocks, %zu of 8-16 B outside the cache\n", N, outside);
}

/* ---- trim ---- */

static void trim(void)
{
	enum { N = 40000 };
	static unsigned char *p[N];
	warm();
	for (int i = 0; i < N; i++)
		p[i] = get(512);
	for (int i = 0; i < N; i++)
		check_put(p[i]);
	uint64_t flushed = stat("malloc.small.cache_flushed");
	uint64_t held = stat("malloc.small.allocated_bytes");
	/* What this thread's stack could not hold went to the transfer
	 * cache, 2 MiB at most for one class, blocks of 512 B. */
	uint64_t transfer = stat("malloc.small.transfer_bytes");
	if (stat_fn && (!transfer || transfer > (2u << 20) || transfer % 512))
		FAIL("the transfer caches hold %llu bytes", (unsigned long long)transfer);
	malloc_trim(0);
	uint64_t now = stat("malloc.small.allocated_bytes");
	if (stat_fn && stat("malloc.small.cache_flushed") == flushed)
		FAIL("malloc_trim gave back no block");
	if (stat_fn && stat("malloc.small.transfer_bytes"))
		FAIL("the transfer caches hold %llu bytes after malloc_trim",
		     (unsigned long long)stat("malloc.small.transfer_bytes"));
	/* The transfer cache alone holds up to 2 MiB of them. */
	if (stat_fn && now + (256u << 10) > held)
		FAIL("malloc_trim: %llu bytes allocated before, %llu after", (unsigned long long)held,
		     (unsigned long long)now);
	for (int i = 0; i < N; i++) /* and the cache serves on */
		p[i] = get(512);
	for (int i = 0; i < N; i++)
		check_put(p[i]);
	printf("allocated %llu bytes before malloc_trim, %llu after\n", (unsigned long long)held,
	       (unsigned long long)now);
	/* Blocks of a large class of jemalloc's (32 KiB): those the
	 * thread's caches held go back too, its explicit jemalloc cache's
	 * (4 a class) with them. */
	malloc_trim(0);
	uint64_t before = stat("malloc.small.allocated_bytes");
	for (int i = 0; i < 64; i++)
		p[i] = get(32768);
	for (int i = 0; i < 64; i++)
		check_put(p[i]);
	/* One taken again: the stack's blocks are no longer whole batches,
	 * and the rest go back through the explicit cache. */
	unsigned char *one = get(32768);
	malloc_trim(0);
	now = stat("malloc.small.allocated_bytes");
	check_put(one);
	if (stat_fn && now > before + (64u << 10))
		FAIL("64 blocks of 32 KiB freed, one taken, malloc_trim: %llu bytes allocated before, %llu after",
		     (unsigned long long)before, (unsigned long long)now);
	printf("64 blocks of 32 KiB freed, one taken, malloc_trim: %llu bytes allocated before, %llu after\n",
	       (unsigned long long)before, (unsigned long long)now);
	/* And of a big class (300 KiB): the one the thread kept, back to
	 * the arena. */
	malloc_trim(0);
	before = stat("malloc.small.allocated_bytes");
	for (int i = 0; i < 16; i++)
		p[i] = get(300 << 10);
	for (int i = 0; i < 16; i++)
		check_put(p[i]);
	uint64_t freed = stat("malloc.small.allocated_bytes");
	malloc_trim(0);
	now = stat("malloc.small.allocated_bytes");
	if (stat_fn && (now > before + (64u << 10) || freed < before + (300u << 10)))
		FAIL("16 blocks of 300 KiB freed: %llu bytes allocated before, %llu freed, %llu after malloc_trim",
		     (unsigned long long)before, (unsigned long long)freed, (unsigned long long)now);
	printf("16 blocks of 300 KiB freed: %llu bytes allocated before, %llu freed, %llu after malloc_trim\n",
	       (unsigned long long)before, (unsigned long long)freed, (unsigned long long)now);
}

/* ---- fork ---- */

static volatile int stop;

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	unsigned char *keep[64] = {0};
	while (!stop) {
		int k = rand_r(&seed) % 64;
		if (keep[k])
			check_put(keep[k]);
		keep[k] = get(any_size(&seed));
	}
	for (int k = 0; k < 64; k++)
		if (keep[k])
			check_put(keep[k]);
	return NULL;
}

static void forks(void)
{
	pthread_t t[2];
	warm();
	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, churn, (void *)(i + 7)))
			FAIL("pthread_create");
	for (int f = 0; f < 100; f++) {
		pid_t pid = fork();
		if (pid < 0)
			FAIL("fork");
		if (!pid) {
			/* Blocks of 16-64 KiB count in large_calls. */
			uint64_t before = stat("malloc.small.calls") + stat("malloc.small.large_calls");
			static unsigned char *p[5000];
			for (int i = 0; i < 5000; i++)
				p[i] = get(1 + (size_t)i * 7 % 65536);
			for (int i = 0; i < 5000; i++)
				check_put(p[i]);
			if (stat_fn && stat("malloc.small.calls") + stat("malloc.small.large_calls") < before + 5000)
				FAIL("child: malloc.small.calls and large_calls did not count its calls");
			_exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			FAIL("fork %d: child failed (status %d)", f, st);
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

/* ---- blocked ---- */

static void blocked(void)
{
	void *at = (void *)BASE;
	void *q = mmap(at, SPAN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	int taken_here = q == at;
	if (q != MAP_FAILED && q != at)
		munmap(q, SPAN);
	if (stat_fn && !taken_here)
		FAIL("the region was in use before main");
	static unsigned char *p[20000];
	int outside = 0;
	warm();
	for (int i = 0; i < 20000; i++) {
		p[i] = get(1 + (size_t)i % 1024);
		outside += !cached(p[i]);
	}
	for (int i = 0; i < 20000; i++)
		check_put(p[i]);
	if (stat_fn && outside != 20000)
		FAIL("%d of 20000 blocks in the region, taken before the cache started", 20000 - outside);
	printf("the region taken before the cache started: %d of 20000 blocks outside\n", outside);
}

/* ---- tcaches ---- */

/* n malloc/free pairs of 32 B; n < 0: a first call of 100 KiB, above
 * the cache's classes. */
static void *pairs(void *arg)
{
	long n = (long)(intptr_t)arg;
	if (n < 0) {
		unsigned char *p = get(100000);
		check_put(p);
		return NULL;
	}
	for (long i = 0; i < n; i++)
		check_put(get(32));
	return NULL;
}

/* 300 reallocs of a block from nothing, and its free. */
static void *reallocs(void *arg)
{
	unsigned char *p = NULL;
	for (size_t n = 1; n <= 300; n++) {
		unsigned char *q = realloc(p, n);
		if (!q)
			FAIL("realloc");
		q[n - 1] = (unsigned char)n;
		p = q;
	}
	free(p);
	return arg;
}

/* Frees 300 blocks of 100 KiB another thread took. */
static void *frees(void *arg)
{
	unsigned char **blocks = arg;
	for (int i = 0; i < 300; i++)
		check_put(blocks[i]);
	return NULL;
}

static void run_one(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, arg) || pthread_join(t, NULL))
		FAIL("pthread_create");
}

static void run_pairs(int threads, long n)
{
	for (int i = 0; i < threads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, pairs, (void *)(intptr_t)n) || pthread_join(t, NULL))
			FAIL("pthread_create");
	}
}

typedef int (*ctl_fn)(const char *, void *, size_t *, void *, size_t);

/* A thread of 4 calls: jemalloc's interface answers as where every thread
 * has its jemalloc thread cache from its first call. */
static void *asks(void *arg)
{
	ctl_fn ctl = (ctl_fn)arg;
	for (int i = 0; i < 2; i++)
		check_put(get(32));
	_Bool on = 0, opt = 0;
	size_t sz = sizeof on, osz = sizeof opt;
	if (ctl("thread.tcache.enabled", &on, &sz, NULL, 0) || !on)
		FAIL("thread.tcache.enabled: not true in a thread of 4 calls");
	if (ctl("thread.tcache.flush", NULL, NULL, NULL, 0))
		FAIL("thread.tcache.flush refused in a thread of 4 calls");
	if (ctl("opt.tcache", &opt, &osz, NULL, 0) || !opt)
		FAIL("opt.tcache: not true");
	return NULL;
}

/* Where jemalloc's thread caches are the cache's to make (lazy), a
 * thread of a few calls makes none, one of many calls makes one, and one
 * whose first call is above the cache's classes makes one at once; where
 * the program's MALLOC_CONF is set (eager), jemalloc makes them and the
 * cache none; where the cache was refused after jemalloc started without
 * them (lone), each thread makes one at its first call. */
enum { LAZY, EAGER, LONE };
static void tcaches(int mode)
{
	if (!stat_fn)
		return;
	const char *name = "malloc.small.thread_tcaches";
	for (int i = 0; i < 300; i++) /* this thread's made first, where lazy */
		check_put(get(32));
	uint64_t t0 = stat(name);
	run_pairs(50, 8);
	uint64_t t1 = stat(name);
	run_pairs(10, 2000);
	uint64_t t2 = stat(name);
	run_pairs(5, -1);
	uint64_t t3 = stat(name);
	run_one(reallocs, NULL);
	static unsigned char *blocks[300];
	for (int i = 0; i < 300; i++)
		blocks[i] = get(100000);
	uint64_t t4 = stat(name);
	run_one(frees, blocks);
	uint64_t t5 = stat(name);
	uint64_t few = t1 - t0, many = t2 - t1, big = t3 - t2, re = t4 - t3, fr = t5 - t4;
	uint64_t want_few = mode == LONE ? 50 : 0, want = mode == EAGER ? 0 : 1;
	/* Frees alone make none, as jemalloc keeps a thread that only frees
	 * without one; but where the pthread keys are used up (LONE), the
	 * thread's first free has glibc calloc a slot for jemalloc's key, a
	 * call that makes one. */
	if (re != want || fr != (mode == LONE))
		FAIL("thread caches made: %llu for a thread of reallocs, %llu for one of frees of another's blocks",
		     (unsigned long long)re, (unsigned long long)fr);
	if (few != want_few || many != 10 * want || big != 5 * want)
		FAIL("thread caches made: %llu for 50 threads of 16 calls, %llu for 10 of 4000, %llu for 5 of a "
		     "100 KiB block first",
		     (unsigned long long)few, (unsigned long long)many, (unsigned long long)big);
	printf("thread caches made: %llu for 50 threads of 16 calls, %llu for 10 of 4000, %llu for 5 of a "
	       "100 KiB block first\n",
	       (unsigned long long)few, (unsigned long long)many, (unsigned long long)big);
	ctl_fn ctl = (ctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	pthread_t t;
	if (!ctl || pthread_create(&t, NULL, asks, (void *)ctl) || pthread_join(t, NULL))
		FAIL("mallctl or pthread_create");
}

/* n calls of malloc(size), each block kept: whether the last lies in
 * the cache's region. All freed. */
static int last_cached(int n, size_t size)
{
	void *held[512];
	if (n > 512)
		FAIL("last_cached: %d calls", n);
	for (int i = 0; i < n; i++)
		held[i] = get(size);
	int in = cached(held[n - 1]);
	for (int i = 0; i < n; i++)
		free(held[i]);
	return in;
}

static void *calls_100(void *arg)
{
	*(int *)arg = last_cached(100, 64);
	return NULL;
}

static void *calls_300(void *arg)
{
	*(int *)arg = last_cached(300, 64);
	return NULL;
}

/* jemalloc's thread cache of the calling thread flushed: 0, or its
 * error (EFAULT where the thread has none). */
static int tcache_flush(void)
{
	ctl_fn ctl = (ctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	return ctl ? ctl("thread.tcache.flush", NULL, NULL, NULL, 0) : 0;
}

struct frees_only {
	void *blocks[300];
	int flushed; /* tcache_flush()'s answer after the frees */
};

static void *frees_only(void *arg)
{
	struct frees_only *f = arg;
	for (int i = 0; i < 300; i++)
		free(f->blocks[i]);
	f->flushed = tcache_flush();
	return NULL;
}

/* small_cache.c's WARM: the process's first thread asks for 6 KiB in
 * 100 calls, then for 160 KiB more, then for 120 KiB more (170 calls in
 * all); later threads, and one that only frees. Each thread that caches
 * has a jemalloc thread cache of its own for what jemalloc serves. */
static void warm_rule(void)
{
	int before = last_cached(100, 64), mid = last_cached(40, 4096), past = last_cached(30, 4096);
	if (!stat_fn) /* glibc: the calls only */
		return;
	if (before || mid)
		FAIL("the thread's cache started before it asked for 256 KiB (%s)", before ? "6 KiB" : "166 KiB");
	if (!past)
		FAIL("286 KiB asked for: the thread's cache did not start");
	int e = tcache_flush();
	if (e)
		FAIL("thread.tcache.flush: %d in a thread whose cache started at its 170th call", e);
	int few = 1, more = 0;
	run_one(calls_100, &few);
	run_one(calls_300, &more);
	if (few)
		FAIL("a thread of 100 calls started its cache");
	if (!more)
		FAIL("a thread of 300 calls, the arena made, did not start its cache");
	static struct frees_only f;
	for (int i = 0; i < 300; i++)
		f.blocks[i] = get(64);
	run_one(frees_only, &f);
	if (f.flushed)
		FAIL("thread.tcache.flush: %d in a thread of 300 frees", f.flushed);
}

/* jemalloc's interface where jemalloc could not start: EAGAIN from the
 * main thread and from another, not a wait without end. */
static void *ask_narenas(void *arg)
{
	ctl_fn ctl = (ctl_fn)arg;
	unsigned n = 0;
	size_t sz = sizeof n;
	int e = ctl("arenas.narenas", &n, &sz, NULL, 0);
	if (e != EAGAIN)
		FAIL("mallctl(arenas.narenas): %d, not EAGAIN", e);
	return NULL;
}

static void ctl_refused(void)
{
	ctl_fn ctl = (ctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	if (!ctl)
		return;
	ask_narenas((void *)ctl);
	run_one(ask_narenas, (void *)ctl);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	stat_fn = (int (*)(const char *, uint64_t *))dlsym(RTLD_DEFAULT, "hz_stat");
	const char *m = argv[1];
	if (!strcmp(m, "where")) {
		warm();
		void *p = malloc(64);
		printf("%s\n", cached(p) ? "cached" : "not cached");
		free(p);
	} else if (!strcmp(m, "remote")) {
		remote();
	} else if (!strcmp(m, "exits")) {
		exits();
	} else if (!strcmp(m, "counts")) {
		counts();
	} else if (!strcmp(m, "aligned")) {
		aligned();
	} else if (!strcmp(m, "trim")) {
		trim();
	} else if (!strcmp(m, "fork")) {
		forks();
	} else if (!strcmp(m, "blocked")) {
		blocked();
	} else if (!strcmp(m, "resize")) {
		resize();
	} else if (!strcmp(m, "lastround")) {
		lastround();
	} else if (!strcmp(m, "tcaches")) {
		tcaches(LAZY);
	} else if (!strcmp(m, "tcaches_eager")) {
		tcaches(EAGER);
	} else if (!strcmp(m, "tcaches_lone")) {
		tcaches(LONE);
	} else if (!strcmp(m, "warm")) {
		warm_rule();
	} else if (!strcmp(m, "ctl_refused")) {
		ctl_refused();
	} else {
		return 2;
	}
	printf("ok\n");
	return 0;
}
