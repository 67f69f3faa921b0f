/* The malloc family at its edges, run with libhugezero.so preloaded (and
 * without it, as the reference: every check holds for glibc too). Prints
 * one line per failure and "N passed, N failed". With "doublefree" it
 * frees a large block twice, which must abort with a message; with
 * "rlimit" it runs out of address space (RLIMIT_AS); with "nothp" it runs
 * with transparent huge pages disabled for the process. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../util/check.h"

/* Opaque to the compiler: it may not fold the calls below away. */
static size_t (*volatile opaque)(size_t) = NULL;
static size_t id(size_t n)
{
	return opaque ? opaque(n) : n;
}

static void edges(void)
{
	void *a = malloc(id(0)), *b = malloc(id(0));
	CHECK(a && b && a != b, "malloc(0) must return unique pointers");
	free(a);
	free(b);
	free(NULL);

	errno = 0;
	CHECK(calloc(id(SIZE_MAX / 2), 3) == NULL && errno == ENOMEM, "calloc overflow");
	errno = 0;
	CHECK(reallocarray(NULL, id(SIZE_MAX / 2), 3) == NULL && errno == ENOMEM, "reallocarray overflow");
	errno = 0;
	CHECK(malloc(id(SIZE_MAX)) == NULL && errno == ENOMEM, "malloc(SIZE_MAX)");
	errno = 0;
	CHECK(malloc(id((size_t)1 << 62)) == NULL && errno == ENOMEM, "malloc(2^62)");
	/* The small alignments (at most 16 B) take malloc's way in the
	 * thread cache: impossible sizes fail as malloc's do. */
	for (size_t a8 = 8; a8 <= 16; a8 += 8) {
		errno = 0;
		CHECK(memalign(id(a8), id(SIZE_MAX)) == NULL && errno == ENOMEM, "memalign(%zu, SIZE_MAX)", a8);
		void *r = (void *)1;
		CHECK(posix_memalign(&r, a8, id(SIZE_MAX - a8 + 1)) == ENOMEM && r == (void *)1,
		      "posix_memalign(%zu, SIZE_MAX)", a8);
		errno = 0;
		CHECK(aligned_alloc(id(a8), id(SIZE_MAX - a8 + 1)) == NULL && errno == ENOMEM,
		      "aligned_alloc(%zu, SIZE_MAX)", a8);
	}

	void *p = malloc(100);
	CHECK(realloc(p, 0) == NULL, "realloc(p, 0) frees and returns NULL");

	void *q = (void *)1;
	CHECK(posix_memalign(&q, 3, 10) == EINVAL && q == (void *)1, "posix_memalign align 3");
	CHECK(posix_memalign(&q, 4, 10) == EINVAL, "posix_memalign align below sizeof(void *)");
	/* glibc 2.36's aligned_alloc is memalign: any alignment, rounded up
	 * to a power of two (2.38 made it EINVAL). */
	void *al = aligned_alloc(id(3), 10);
	CHECK(al && (uintptr_t)al % 4 == 0, "aligned_alloc align 3");
	free(al);
	void *m = memalign(id(24), 100);
	CHECK(m && (uintptr_t)m % 32 == 0, "memalign(24) rounds up to 32");
	free(m);
	void *v = valloc(id(10));
	CHECK(v && (uintptr_t)v % 4096 == 0, "valloc");
	free(v);
	void *pv = pvalloc(id(0));
	CHECK(pv && (uintptr_t)pv % 4096 == 0, "pvalloc(0)");
	free(pv);

	/* free keeps errno, small and large. */
	void *s = malloc(64), *l = malloc((size_t)8 << 20);
	errno = 4321;
	free(s);
	free(l);
	CHECK(errno == 4321, "free changed errno to %d", errno);
	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL)");
}

/* mallinfo2 sees a large block come and go; mallopt takes glibc's options;
 * malloc_stats writes. */
static void introspection(void)
{
	/* Through pointers: the compiler may drop a malloc/free pair. */
	void *(*volatile get)(size_t) = malloc;
	void (*volatile put)(void *) = free;
	struct mallinfo2 a = mallinfo2();
	unsigned char *p = get(id((size_t)64 << 20));
	memset(p, 1, (size_t)64 << 20);
	struct mallinfo2 b = mallinfo2();
	put(p);
	malloc_trim(0);
	struct mallinfo2 c = mallinfo2();
	size_t ua = a.uordblks + a.hblkhd, ub = b.uordblks + b.hblkhd, uc = c.uordblks + c.hblkhd;
	CHECK(ub >= ua + ((size_t)64 << 20), "mallinfo2 in use %zu -> %zu", ua, ub);
	/* Less 1 MiB: the free may start the background zeroer, whose thread
	 * glibc gives a few small blocks. */
	CHECK(uc + ((size_t)63 << 20) <= ub, "mallinfo2 after free %zu -> %zu", ub, uc);
	CHECK(mallopt(M_ARENA_MAX, 2) == 1, "mallopt(M_ARENA_MAX)");
	CHECK(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1, "mallopt(M_MMAP_THRESHOLD)");
	CHECK(mallopt(12345, 1) == 1, "glibc takes unknown options too");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	struct mallinfo m = mallinfo();
#pragma GCC diagnostic pop
	CHECK(m.arena >= 0 && m.uordblks >= 0, "mallinfo");
}

static void alignments(void)
{
	static const size_t sizes[] = {1, 100, (size_t)3 << 20};
	for (size_t a = sizeof(void *); a <= ((size_t)64 << 20); a <<= 1)
		for (int k = 0; k < 3; k++) {
			void *p = NULL;
			int rc = posix_memalign(&p, a, sizes[k]);
			CHECK(rc == 0 && p && (uintptr_t)p % a == 0, "posix_memalign(%zu, %zu)", a, sizes[k]);
			if (!p)
				continue;
			size_t u = malloc_usable_size(p);
			CHECK(u >= sizes[k], "usable %zu < %zu at align %zu", u, sizes[k], a);
			memset(p, 0x5A, u);
			free(p);
		}
}

/* calloc after dirty frees returns only zero bytes, at every size class. */
static void calloc_zero(void)
{
	for (size_t n = 1; n <= ((size_t)64 << 20); n = n * 3 / 2 + 1) {
		unsigned char *p = malloc(n);
		memset(p, 0xAB, n);
		free(p);
		unsigned char *q = calloc(1, n);
		CHECK(q && all(q, n, 0), "calloc(%zu) returned a non-zero byte", n);
		memset(q, 0xCD, n);
		free(q);
	}
}

/* Threads allocate, calloc, realloc and free at once, each keeping a
 * shadow of what its blocks must hold. */
static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	enum { LIVE = 32 };
	unsigned char *blk[LIVE] = {0};
	size_t len[LIVE] = {0};
	unsigned char tag = (unsigned char)(0x30 + seed);
	for (int step = 0; step < 4000; step++) {
		int k = (int)(rand_r(&seed) % LIVE);
		size_t n = 1 + (size_t)rand_r(&seed) % ((size_t)1 << (4 + rand_r(&seed) % 20));
		if (blk[k] && !all(blk[k], len[k], tag))
			return (void *)1;
		switch (rand_r(&seed) % 4) {
		case 0:
			free(blk[k]);
			blk[k] = NULL;
			len[k] = 0;
			break;
		case 1: {
			unsigned char *p = realloc(blk[k], n);
			if (!p)
				return (void *)2;
			if (!all(p, len[k] < n ? len[k] : n, tag))
				return (void *)3;
			memset(p, tag, n);
			blk[k] = p;
			len[k] = n;
			break;
		}
		default: {
			free(blk[k]);
			int zero = rand_r(&seed) & 1;
			unsigned char *p = zero ? calloc(1, n) : malloc(n);
			if (!p || (zero && !all(p, n, 0)))
				return (void *)4;
			memset(p, tag, n);
			blk[k] = p;
			len[k] = n;
		}
		}
	}
	for (int k = 0; k < LIVE; k++)
		free(blk[k]);
	return NULL;
}

/* fork while 4 threads allocate (small, large and huge blocks): the child
 * must be able to allocate, calloc and free at every size class. */
static volatile int stop_churn;

static void *churner(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!stop_churn) {
		/* 16 B .. 4 MiB, and 1 in 64 a huge block of 40 MiB */
		size_t n = rand_r(&seed) % 64 ? (size_t)1 << (4 + rand_r(&seed) % 19) : (size_t)40 << 20;
		unsigned char *p = rand_r(&seed) & 1 ? calloc(1, n) : malloc(n);
		if (p)
			p[n - 1] = 1;
		free(p);
	}
	return NULL;
}

static void fork_while_threads_allocate(void)
{
	pthread_t t[4];
	stop_churn = 0;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churner, (void *)(uintptr_t)(i + 7));
	for (int round = 0; round < 10; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (size_t n = 1; n <= ((size_t)64 << 20); n *= 4) {
				unsigned char *p = calloc(1, n);
				if (!p || !all(p, n, 0))
					_exit(1);
				memset(p, 0x77, n);
				free(p);
			}
			_exit(0);
		}
		int status = -1;
		CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			      WEXITSTATUS(status) == 0,
		      "fork round %d: child status %d", round, status);
	}
	stop_churn = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* Out of address space: NULL and ENOMEM, no crash, and once freed the
 * memory serves again (nothing was lost). */
static void out_of_memory(void)
{
	struct rlimit rl = {(rlim_t)1 << 30, (rlim_t)1 << 30}; /* 1 GiB of address space */
	CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit");
	errno = 0;
	CHECK(malloc(id((size_t)2 << 30)) == NULL && errno == ENOMEM, "malloc(2 GiB) under 1 GiB");
	errno = 0;
	CHECK(calloc(1, id((size_t)1 << 30)) == NULL && errno == ENOMEM, "calloc(1 GiB) under 1 GiB");
	enum { MAXB = 512 };
	static void *b[MAXB];
	int n = 0;
	while (n < MAXB && (b[n] = malloc(id((size_t)8 << 20))))
		memset(b[n++], 0x11, 4096);
	CHECK(n > 8 && n < MAXB, "%d blocks of 8 MiB under 1 GiB", n);
	void *small = malloc(id(200)); /* small blocks still come from elsewhere */
	CHECK(small != NULL || errno == ENOMEM, "small malloc at the limit");
	free(small);
	for (int i = 0; i < n; i++)
		free(b[i]);
	int again = 0;
	while (again < n && (b[again] = calloc(1, id((size_t)8 << 20))))
		again++;
	CHECK(again >= n - 2, "after freeing %d blocks only %d fit again", n, again);
	for (int i = 0; i < again; i++)
		free(b[i]);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "rlimit")) {
		out_of_memory();
		return report();
	}
	if (argc > 1 && !strcmp(argv[1], "nothp"))
		CHECK(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0, "PR_SET_THP_DISABLE");
	if (argc > 1 && !strcmp(argv[1], "doublefree")) {
		void (*volatile release)(void *) = free; /* not elided */
		void *p = malloc(id((size_t)4 << 20));
		release(p);
		release(p);
		return 0; /* must not get here */
	}
	edges();
	introspection();
	alignments();
	calloc_zero();
	fork_while_threads_allocate();
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		CHECK(r == NULL, "thread %d failed: %p", i, r);
	}
	return report();
}
