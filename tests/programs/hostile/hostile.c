/* Hostile cases for an allocator, run by hostile.sh under glibc, jemalloc,
 * mimalloc, tcmalloc and hugezero; each mode exits 0 when what it checks
 * holds, and says what failed on stderr otherwise:
 *
 *   forkcalloc        a round (three times malloc, fill with 0x5A, free; idle
 *                     0.3 s; calloc the same size, every byte zero) of 8 and
 *                     20 MiB, then fork with blocks just freed; parent and
 *                     child each do 5 more rounds of both sizes.
 *   untouched N MIB   N blocks of MIB MiB, one byte written in each: all
 *                     non-NULL; then freed.
 *   one KIB           one block of KIB KiB, every page written.
 *   threads           four threads, each a 1 MiB block, every page written.
 *   count MIB         blocks of MIB MiB, one byte written in each, until
 *                     malloc fails (at most 100000): prints VmSize and
 *                     VmData (KiB) after a first small block, and the count.
 *   mallctl           jemalloc's control interface, where the allocator
 *                     has one (looked up: prints "none" otherwise):
 *                     mallctl's epoch and arenas.narenas answer,
 *                     malloc_stats_print writes; then blocks of 1 MiB until
 *                     malloc fails, and mallctl answers 0 or EAGAIN.
 *   segments          reads every byte of every writable load segment of
 *                     every loaded object, as a garbage collector looking
 *                     for roots does (Boehm's, Guile's), after a block of
 *                     each size: prints the bytes read.
 *   commit            400 blocks of 1-25 MiB, 40 live: prints the peak
 *                     of the private writable mappings (KiB), what
 *                     overcommit mode 2 charges.
 *   cgroup            300 blocks of 8-48 MiB, each calloc'd and checked
 *                     zero (the first and last page whole, the first byte of
 *                     every page), every page written; at most four live,
 *                     the oldest freed before a fifth is taken.
 *   impossible        sizes no machine has: NULL and ENOMEM from each entry
 *                     point; then 100000 small blocks and a 40 MiB one work.
 *   doublefree trim|notrim|kept
 *                     free a written 40 MiB block twice (malloc_trim(0)
 *                     between), or a 1 MiB one (which hugezero keeps
 *                     whole at its first free, for the next malloc of
 *                     its length): the second free must abort the
 *                     process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "footprint.h"

#define MIB ((size_t)1 << 20)
#define PAGE 4096

static const char *who = "";

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "%s", who);                                                        \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

static void touch(char *p, size_t n, char v)
{
	for (size_t i = 0; i < n; i += PAGE)
		p[i] = v;
	p[n - 1] = v;
}

/* Through a volatile: the compiler sees neither the size nor the pointer. */
static size_t hide(size_t x)
{
	volatile size_t v = x;
	return v;
}

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---- forkcalloc ---- */
static void dirty(size_t size)
{
	for (int i = 0; i < 3; i++) {
		char *p = malloc(size);
		if (!p)
			FAIL("malloc(%zu MiB) returned NULL", size / MIB);
		memset(p, 0x5A, size);
		free(p);
	}
}

static void round_(size_t size)
{
	dirty(size);
	nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
	unsigned char *c = calloc(1, size);
	if (!c)
		FAIL("calloc(%zu MiB) returned NULL", size / MIB);
	size_t nz = 0;
	for (size_t i = 0; i < size; i++)
		nz += c[i] != 0;
	free(c);
	if (nz)
		FAIL("calloc(%zu MiB): %zu non-zero bytes", size / MIB, nz);
}

static int forkcalloc(void)
{
	round_(8 * MIB);
	round_(20 * MIB);
	dirty(20 * MIB); /* freed just before the fork: being cleared across it */
	pid_t pid = fork();
	if (pid < 0)
		FAIL("fork failed");
	who = pid ? "parent after fork: " : "child after fork: ";
	for (int r = 0; r < 5; r++) {
		round_(8 * MIB);
		round_(20 * MIB);
	}
	if (pid == 0)
		exit(0);
	int st;
	if (waitpid(pid, &st, 0) != pid)
		FAIL("waitpid failed");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		FAIL("the child ended with status 0x%x", st);
	return 0;
}

/* ---- untouched, one, threads, count ---- */
static int untouched(size_t n, size_t mib)
{
	char **v = malloc(n * sizeof *v);
	if (!v)
		FAIL("malloc of the table failed");
	for (size_t i = 0; i < n; i++) {
		v[i] = malloc(mib * MIB);
		if (!v[i])
			FAIL("block %zu of %zu x %zu MiB: NULL (errno %d)", i, n, mib, errno);
		v[i][0] = 1;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return 0;
}

static int one(size_t kib)
{
	char *p = malloc(kib << 10);
	if (!p)
		FAIL("malloc(%zu KiB) returned NULL", kib);
	touch(p, kib << 10, 1);
	free(p);
	return 0;
}

static void *thread_block(void *arg)
{
	(void)arg;
	char *p = malloc(MIB);
	if (p)
		touch(p, MIB, 1);
	return p;
}

static int threads(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		int e = pthread_create(&t[i], NULL, thread_block, NULL);
		if (e)
			FAIL("pthread_create %d: %s", i, strerror(e));
	}
	int bad = 0;
	for (int i = 0; i < 4; i++) {
		void *p;
		pthread_join(t[i], &p);
		bad += !p;
		free(p);
	}
	if (bad)
		FAIL("%d of 4 threads' malloc(1 MiB) returned NULL", bad);
	return 0;
}

static int count(size_t mib)
{
	size_t n = 0;
	print_footprint();
	for (; n < 100000; n++) {
		char *p = malloc(mib * MIB);
		if (!p)
			break;
		p[0] = 1;
	}
	printf("%zu\n", n);
	return 0;
}

/* ---- mallctl ---- */

static size_t stats_bytes;

static void stats_write(void *arg, const char *s)
{
	(void)arg;
	stats_bytes += strlen(s);
}

static int mallctl_(void)
{
	typedef int ctl_fn(const char *, void *, size_t *, void *, size_t);
	typedef void print_fn(void (*)(void *, const char *), void *, const char *);
	ctl_fn *ctl = (ctl_fn *)dlsym(RTLD_DEFAULT, "mallctl");
	print_fn *print = (print_fn *)dlsym(RTLD_DEFAULT, "malloc_stats_print");
	if (!ctl || !print) {
		printf("none\n");
		return 0;
	}
	print_footprint();
	uint64_t epoch = 1;
	size_t sz = sizeof epoch;
	int e = ctl("epoch", &epoch, &sz, &epoch, sz);
	if (e)
		FAIL("mallctl(\"epoch\") gave %d", e);
	unsigned n = 0;
	sz = sizeof n;
	if ((e = ctl("arenas.narenas", &n, &sz, NULL, 0)) || n == 0)
		FAIL("mallctl(\"arenas.narenas\") gave %d, %u arenas", e, n);
	print(stats_write, NULL, NULL);
	if (stats_bytes == 0)
		FAIL("malloc_stats_print wrote nothing");
	size_t blocks = 0;
	for (; blocks < 100000; blocks++) {
		char *p = malloc(MIB);
		if (!p)
			break;
		p[0] = 1;
	}
	sz = sizeof epoch;
	e = ctl("epoch", &epoch, &sz, &epoch, sz);
	if (e && e != EAGAIN)
		FAIL("mallctl(\"epoch\") with the address space full gave %d", e);
	printf("%u arenas, %zu bytes of statistics, %zu blocks of 1 MiB\n", n, stats_bytes, blocks);
	return 0;
}

/* ---- segments ---- */

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		const volatile unsigned char *b = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		unsigned char any = 0;
		for (size_t k = 0; k < ph->p_memsz; k += 64)
			any |= b[k];
		(void)any;
		*(size_t *)arg += ph->p_memsz;
	}
	return 0;
}

static int segments(void)
{
	static const size_t sizes[] = {64, 200000, 4 << 20};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		free(malloc(sizes[i]));
	size_t bytes = 0;
	dl_iterate_phdr(scan_object, &bytes);
	printf("%zu bytes of writable segments read\n", bytes);
	return 0;
}

/* ---- commit ---- */

/* What overcommit mode 2 charges the process: its private writable
 * mappings, in KiB. */
static long charge_kb(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], perm[8];
	long kb = 0;
	unsigned long a, b;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) == 3 && perm[1] == 'w' && perm[3] == 'p')
			kb += (long)((b - a) >> 10);
	if (f)
		fclose(f);
	return kb;
}

/* 400 blocks of 1-25 MiB, 40 live, half calloc'd, the oldest freed
 * first: prints the peak charge (KiB). */
static int commit(void)
{
	char *live[40] = {0};
	unsigned s = 7;
	long peak = 0;
	for (int r = 0; r < 400; r++) {
		int k = r % 40;
		free(live[k]);
		s = s * 1103515245u + 12345u;
		size_t n = (s >> 8) % (24 * MIB) + MIB;
		live[k] = (s >> 4) & 1 ? calloc(1, n) : malloc(n);
		if (!live[k])
			FAIL("block %d of %zu bytes: NULL, errno %d", r, n, errno);
		live[k][0] = 1;
		long c = charge_kb();
		if (c > peak)
			peak = c;
	}
	printf("%ld\n", peak);
	return 0;
}

/* ---- cgroup ---- */
static int cgroup(void)
{
	char *blk[4] = {0};
	for (int it = 0; it < 300; it++) {
		int s = it % 4;
		free(blk[s]);
		size_t size = 8 * MIB + next() % (40 * MIB + 1);
		unsigned char *p = calloc(1, size);
		if (!p)
			FAIL("iteration %d: calloc(%zu) returned NULL", it, size);
		for (size_t i = 0; i < PAGE; i++)
			if (p[i] || p[size - 1 - i])
				FAIL("iteration %d: calloc(%zu) not zero in its first or last page", it,
				     size);
		for (size_t i = 0; i < size; i += PAGE) {
			if (p[i])
				FAIL("iteration %d: calloc(%zu) not zero at %zu", it, size, i);
			p[i] = (unsigned char)(it | 1);
		}
		p[size - 1] = 1;
		blk[s] = (char *)p;
	}
	for (int s = 0; s < 4; s++)
		free(blk[s]);
	return 0;
}

/* ---- impossible ---- */
#define EXPECT_NULL(expr, text)                                                                    \
	do {                                                                                       \
		errno = 0;                                                                         \
		void *r_ = (expr);                                                                 \
		int e_ = errno;                                                                    \
		if (r_)                                                                            \
			FAIL("%s returned %p, not NULL", text, r_);                                \
		if (e_ != ENOMEM)                                                                  \
			FAIL("%s: NULL but errno %d, not ENOMEM", text, e_);                       \
	} while (0)

static int impossible(void)
{
	const size_t T64 = hide((size_t)1 << 46), T32 = hide((size_t)1 << 45), MAX = hide(SIZE_MAX);
	EXPECT_NULL(malloc(T64), "malloc(1<<46)");
	EXPECT_NULL(malloc(T32), "malloc(1<<45)");
	EXPECT_NULL(malloc(MAX), "malloc(SIZE_MAX)");
	EXPECT_NULL(malloc(MAX - 4 * MIB), "malloc(SIZE_MAX - 4 MiB)");
	EXPECT_NULL(calloc(1, T64), "calloc(1, 1<<46)");
	EXPECT_NULL(calloc(T32, 2), "calloc(1<<45, 2)");
	EXPECT_NULL(calloc(MAX / 2, 3), "calloc(SIZE_MAX/2, 3) (overflow)");
	EXPECT_NULL(memalign(4096, T32), "memalign(4096, 1<<45)");
	EXPECT_NULL(memalign(2 * MIB, MAX - 4096), "memalign(2 MiB, SIZE_MAX - 4096)");
	EXPECT_NULL(aligned_alloc(4096, T64), "aligned_alloc(4096, 1<<46)");

	char *s = malloc(32);
	if (!s)
		FAIL("malloc(32) returned NULL");
	memcpy(s, "still here", 11);
	EXPECT_NULL(realloc(s, T64), "realloc(small, 1<<46)");
	EXPECT_NULL(realloc(s, MAX - 4096), "realloc(small, SIZE_MAX - 4096)");
	if (strcmp(s, "still here"))
		FAIL("the block a failed realloc kept changed");
	free(s);

	void *q = NULL;
	int e = posix_memalign(&q, 4096, T64);
	if (e != ENOMEM)
		FAIL("posix_memalign(4096, 1<<46) returned %d (%p), not ENOMEM", e, q);
	e = posix_memalign(&q, 2 * MIB, MAX - 4096);
	if (e != ENOMEM)
		FAIL("posix_memalign(2 MiB, SIZE_MAX - 4096) returned %d (%p), not ENOMEM", e, q);

	/* Nothing widened: small blocks and a large one as usual. */
	enum { N = 100000 };
	unsigned char **v = malloc(N * sizeof *v);
	size_t *len = malloc(N * sizeof *len);
	if (!v || !len)
		FAIL("malloc of the tables failed");
	for (int i = 0; i < N; i++) {
		len[i] = 1 + next() % 1024;
		v[i] = malloc(len[i]);
		if (!v[i])
			FAIL("small block %d: NULL", i);
		memset(v[i], (unsigned char)i, len[i]);
	}
	for (int i = 0; i < N; i++) {
		for (size_t j = 0; j < len[i]; j++)
			if (v[i][j] != (unsigned char)i)
				FAIL("small block %d (%zu B) changed at %zu", i, len[i], j);
		free(v[i]);
	}
	free(v);
	free(len);
	char *big = malloc(40 * MIB);
	if (!big)
		FAIL("malloc(40 MiB) after the impossible sizes: NULL");
	touch(big, 40 * MIB, 1);
	free(big);
	return 0;
}

/* ---- doublefree ---- */
static int doublefree(int trim, size_t mib)
{
	char *p = malloc(mib * MIB);
	if (!p)
		FAIL("malloc(%zu MiB) returned NULL", mib);
	memset(p, 1, mib * MIB);
	char *volatile again = p; /* no use-after-free warning */
	free(p);
	if (trim)
		malloc_trim(0);
	free(again);
	FAIL("the second free(p) of a %zu MiB block returned", mib);
}

/* ---- sequence ---- */

/* A random sequence of live blocks under an address-space limit (the
 * least of RLIMIT_AS and RLIMIT_DATA): STEPS calls, each a malloc,
 * calloc, realloc, aligned_alloc or free, of sizes from 16 B to 64 MiB
 * (log-uniform), the live bytes kept within PERCENT of the limit (frees
 * at random make the room). Each block is written at 16 places and its
 * ends; calloc's are checked zero there. Prints the calls refused and
 * the peak of live bytes; the script compares the refusals with glibc's
 * on the same seed. */
struct live {
	char *p;
	size_t n;
};

static size_t limit_bytes(void)
{
	struct rlimit as, data;
	getrlimit(RLIMIT_AS, &as);
	getrlimit(RLIMIT_DATA, &data);
	rlim_t l = as.rlim_cur < data.rlim_cur ? as.rlim_cur : data.rlim_cur;
	return l == RLIM_INFINITY ? (size_t)1 << 30 : (size_t)l;
}

static size_t seq_size(size_t room)
{
	/* 2^4 to 2^26 bytes, log-uniform, then anywhere in the octave */
	size_t lg = 4 + next() % 23, n = ((size_t)1 << lg) + next() % ((size_t)1 << lg);
	return n < room ? n : room;
}

static void seq_write(char *p, size_t n, int zero, size_t step)
{
	for (int w = zero ? 0 : 1; w < 2; w++)
		for (int i = 0; i <= 16; i++) {
			size_t at = i == 16 ? n - 1 : n / 16 * (size_t)i;
			if (w)
				p[at] = (char)(step | 1);
			else if (p[at])
				FAIL("step %zu: calloc(%zu) byte %zu is %d", step, n, at, p[at]);
		}
}

static int sequence(uint64_t seed, size_t percent, size_t steps)
{
	enum { MAX_LIVE = 4096 };
	static struct live b[MAX_LIVE];
	size_t nb = 0, live = 0, peak = 0, refused = 0, budget = limit_bytes() / 100 * percent;
	rng = seed * 0x9E3779B97F4A7C15u | 1; /* never 0, where xorshift stays */
	for (size_t step = 0; step < steps; step++) {
		unsigned op = (unsigned)(next() % 16);
		if (nb && (op < 5 || nb == MAX_LIVE)) { /* free */
			size_t i = next() % nb;
			free(b[i].p);
			live -= b[i].n;
			b[i] = b[--nb];
			continue;
		}
		size_t n = seq_size(budget / 2 ? budget / 2 : 16);
		while (nb && live + n > budget) { /* make room */
			size_t i = next() % nb;
			free(b[i].p);
			live -= b[i].n;
			b[i] = b[--nb];
		}
		if (live + n > budget)
			continue;
		if (nb && op < 8) { /* realloc a live block to n */
			size_t i = next() % nb;
			char *q = realloc(b[i].p, n);
			if (!q) {
				refused++;
				printf("step %zu: realloc(%zu -> %zu) refused\n", step, b[i].n, n);
				continue;
			}
			live = live - b[i].n + n;
			b[i] = (struct live){q, n};
			seq_write(q, n, 0, step);
		} else {
			int zero = op >= 12;
			char *q = op == 11 ? aligned_alloc(4096, (n + 4095) & ~(size_t)4095)
				  : zero   ? calloc(1, n)
					   : malloc(n);
			if (!q) {
				refused++;
				printf("step %zu: %s(%zu) refused, %zu live bytes in %zu blocks\n", step,
				       op == 11 ? "aligned_alloc" : zero ? "calloc" : "malloc", n, live, nb);
				continue;
			}
			live += n;
			b[nb++] = (struct live){q, n};
			seq_write(q, n, zero, step);
		}
		if (live > peak)
			peak = live;
	}
	printf("refused %zu peak %zu\n", refused, peak >> 10);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	size_t a = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
	size_t b = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
	if (!strcmp(m, "forkcalloc"))
		return forkcalloc();
	if (!strcmp(m, "untouched") && a && b)
		return untouched(a, b);
	if (!strcmp(m, "one") && a)
		return one(a);
	if (!strcmp(m, "threads"))
		return threads();
	if (!strcmp(m, "commit"))
		return commit();
	if (!strcmp(m, "count") && a)
		return count(a);
	if (!strcmp(m, "mallctl"))
		return mallctl_();
	if (!strcmp(m, "segments"))
		return segments();
	if (!strcmp(m, "cgroup"))
		return cgroup();
	if (!strcmp(m, "sequence") && argc > 4)
		return sequence(a, b, strtoull(argv[4], NULL, 0));
	if (!strcmp(m, "impossible"))
		return impossible();
	if (!strcmp(m, "doublefree") && argc > 2)
		return doublefree(!strcmp(argv[2], "trim"), strcmp(argv[2], "kept") ? 40 : 1);
	fprintf(stderr, "usage: %s forkcalloc | untouched N MIB | one KIB | threads | count MIB | "
			"mallctl | segments | cgroup | impossible | sequence SEED PERCENT STEPS | doublefree trim|notrim|kept | commit\n",
		argv[0]);
	return 2;
}
