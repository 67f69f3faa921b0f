/* A shadow-checked allocator workload, shared by tests/programs/faults/
 * faultload.c (a number of operations, under fault injection) and
 * bench/soak.c (a length of time, without). Header only: every function is
 * static; the including program calls sh_run once.
 *
 * Each thread keeps a table of live blocks (pointer, size, and what their
 * bytes must be: a pattern seeded per block, position-dependent, or one
 * byte value after a memset), and does random operations on it:
 * malloc, calloc, posix_memalign, realloc (NULL, grow, shrink, move), free,
 * memset (the whole block, or a range with its neighbours checked), and a
 * check; sizes from 1 B to 64 MiB, mostly small, some 1-40 MiB and a few
 * 40-64 MiB (the huge-mapping path). Every calloc'd block is checked zero,
 * every byte; every block is checked whole before it is freed or resized
 * (realloc: the prefix that must survive), then filled with its pattern,
 * so freed memory is always dirty. Now and then a thread calls
 * malloc_trim(0), or forks: the child checks some of the forking thread's
 * blocks, callocs and checks a few of its own, frees them and exits 0, and
 * the parent checks its status (a child that hangs is killed by alarm(30)).
 *
 * A NULL result (posix_memalign's error) is allowed only with errno (its
 * return value) ENOMEM, and is counted; realloc's old block must then be
 * intact. Anything else is an error: a message on stderr (write(2), no
 * stdio), every thread stops, and sh_run returns the count. */
#ifndef HZ_SHADOW_H
#define HZ_SHADOW_H

#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SH_KIB ((size_t)1 << 10)
#define SH_MIB ((size_t)1 << 20)
#define SH_MAX_SIZE (64 * SH_MIB)
#define SH_SLOTS_MAX 256

struct sh_config {
	const char *name;    /* prefix of every message */
	int threads;	     /* 1..64 */
	long iters;	     /* operations per thread; 0: until the deadline */
	double seconds;	     /* with iters 0: how long */
	uint64_t seed;	     /* the workload's own randomness */
	int slots;	     /* live blocks per thread (default 48) */
	unsigned fork_every; /* one fork per this many operations (0: none) */
	unsigned trim_every; /* one malloc_trim(0) per this many operations (0: none) */
	double progress_s;   /* > 0: a progress line on stderr this often */
};

struct sh_totals {
	unsigned long ops, bytes, callocs, calloc_bytes, checked_bytes, forks, trims;
	unsigned long nulls, null_malloc, null_calloc, null_realloc, null_memalign;
	unsigned long errors;
	double seconds;
};

enum sh_fill { SH_PATTERN = -1 };

struct sh_block {
	unsigned char *p;
	size_t n;
	uint64_t seed; /* SH_PATTERN: the pattern's seed */
	int fill;      /* SH_PATTERN, or the byte every byte holds */
	const char *from;
};

struct sh_thread {
	int id;
	uint64_t rng;
	const struct sh_config *cfg;
	struct sh_block b[SH_SLOTS_MAX];
	pthread_t tid;
};

static struct sh_totals sh_tot;
static int sh_stop;
static int sh_in_child; /* in a forked child: its messages say so */
static double sh_deadline;

typedef uint64_t __attribute__((may_alias)) sh_u64;

#define SH_ADD(field, v) __atomic_fetch_add(&sh_tot.field, (unsigned long)(v), __ATOMIC_RELAXED)

static double sh_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sh_say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int k = sh_in_child ? snprintf(buf, sizeof buf, "in a forked child (pid %d): ", (int)getpid())
			    : 0;
	va_start(ap, fmt);
	int n = vsnprintf(buf + k, sizeof buf - 1 - (size_t)k, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n += k;
	if ((size_t)n > sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	for (char *p = buf; n > 0;) {
		ssize_t w = write(2, p, (size_t)n);
		if (w <= 0)
			break;
		p += w;
		n -= (int)w;
	}
}

/* An error: said, counted, and every thread stops. */
#define sh_error(t, ...)                                                                           \
	do {                                                                                       \
		SH_ADD(errors, 1);                                                                 \
		__atomic_store_n(&sh_stop, 1, __ATOMIC_RELAXED);                                   \
		sh_say(__VA_ARGS__);                                                               \
	} while (0)

static uint64_t sh_rand(struct sh_thread *t)
{
	/* xorshift64* */
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static uint64_t sh_below(struct sh_thread *t, uint64_t n)
{
	return n ? sh_rand(t) % n : 0;
}

/* Log-uniform in [lo, hi]. */
static size_t sh_logrange(struct sh_thread *t, size_t lo, size_t hi)
{
	int a = 63 - __builtin_clzll(lo), b = 63 - __builtin_clzll(hi);
	int e = a + (int)sh_below(t, (uint64_t)(b - a + 1));
	size_t base = (size_t)1 << e, v = base + (size_t)sh_below(t, base);
	return v < lo ? lo : v > hi ? hi : v;
}

static size_t sh_size(struct sh_thread *t)
{
	unsigned r = (unsigned)sh_below(t, 1000);
	if (r < 600)
		return sh_logrange(t, 1, 512);
	if (r < 800)
		return sh_logrange(t, 513, 64 * SH_KIB);
	if (r < 880)
		return sh_logrange(t, 64 * SH_KIB, SH_MIB - 1);
	if (r < 910) /* about the large threshold */
		return SH_MIB - 4096 + (size_t)sh_below(t, 3 * 4096);
	if (r < 985)
		return sh_logrange(t, SH_MIB, 40 * SH_MIB);
	return 40 * SH_MIB + (size_t)sh_below(t, 24 * SH_MIB + 1);
}

/* ---- the contents ---- */

static uint64_t sh_word(uint64_t seed, size_t i)
{
	uint64_t v = seed + i * 0x9e3779b97f4a7c15ull;
	return v ^ (v >> 29);
}

static unsigned char sh_byte(const struct sh_block *b, size_t j)
{
	if (b->fill != SH_PATTERN)
		return (unsigned char)b->fill;
	return (unsigned char)(sh_word(b->seed, j >> 3) >> ((j & 7) * 8));
}

/* The pattern over [from, to) of a block at an 8-aligned address. */
static void sh_fill_range(struct sh_block *b, size_t from, size_t to)
{
	size_t j = from;
	for (; j < to && (j & 7); j++)
		b->p[j] = sh_byte(b, j);
	sh_u64 *w = (sh_u64 *)b->p;
	for (; j + 8 <= to; j += 8)
		w[j >> 3] = sh_word(b->seed, j >> 3);
	for (; j < to; j++)
		b->p[j] = sh_byte(b, j);
}

static void sh_fill(struct sh_thread *t, struct sh_block *b)
{
	b->seed = sh_rand(t);
	b->fill = SH_PATTERN;
	sh_fill_range(b, 0, b->n);
}

/* The first offset in [from, to) whose byte is not what the block holds,
 * or to. */
static size_t sh_first_bad(const struct sh_block *b, size_t from, size_t to)
{
	size_t j = from;
	for (; j < to && (j & 7); j++)
		if (b->p[j] != sh_byte(b, j))
			return j;
	const sh_u64 *w = (const sh_u64 *)b->p;
	if (b->fill == SH_PATTERN) {
		for (; j + 8 <= to; j += 8)
			if (w[j >> 3] != sh_word(b->seed, j >> 3))
				break;
	} else {
		uint64_t v = 0x0101010101010101ull * (unsigned char)b->fill;
		for (; j + 64 <= to; j += 64) {
			const sh_u64 *q = w + (j >> 3);
			if (((q[0] ^ v) | (q[1] ^ v) | (q[2] ^ v) | (q[3] ^ v) | (q[4] ^ v) |
			     (q[5] ^ v) | (q[6] ^ v) | (q[7] ^ v)))
				break;
		}
		for (; j + 8 <= to; j += 8)
			if (w[j >> 3] != v)
				break;
	}
	for (; j < to; j++)
		if (b->p[j] != sh_byte(b, j))
			return j;
	return to;
}

/* A block found changed: what changed, said in one message. */
static void sh_report_bad(struct sh_thread *t, const struct sh_block *b, size_t from, size_t to,
			  size_t bad, const char *when)
{
	size_t nbad = 0, zero = 0, last = bad, pages = 0, lastpage = (size_t)-1;
	for (size_t j = bad; j < to; j++)
		if (b->p[j] != sh_byte(b, j)) {
			nbad++;
			zero += !b->p[j];
			last = j;
			if (j / 4096 != lastpage) {
				pages++;
				lastpage = j / 4096;
			}
		}
	sh_error(t,
		 "%s: thread %d: %s: block %p of %zu bytes (%s, %s) changed: byte %zu is 0x%02x, "
		 "not 0x%02x; %zu bytes differ in [%zu, %zu] (checked [%zu, %zu)), %zu of them "
		 "zero, in %zu pages",
		 t->cfg->name, t->id, when, (void *)b->p, b->n, b->from,
		 b->fill == SH_PATTERN ? "pattern" : "memset", bad, b->p[bad], sh_byte(b, bad),
		 nbad, bad, last, from, to, zero, pages);
}

static int sh_check_range(struct sh_thread *t, const struct sh_block *b, size_t from, size_t to,
			  const char *when)
{
	size_t bad = sh_first_bad(b, from, to);
	SH_ADD(checked_bytes, to - from);
	if (bad == to)
		return 0;
	sh_report_bad(t, b, from, to, bad, when);
	return -1;
}

static int sh_check(struct sh_thread *t, const struct sh_block *b, const char *when)
{
	return sh_check_range(t, b, 0, b->n, when);
}

/* The first non-zero byte of p[0..n), or n. */
static size_t sh_first_nonzero(const unsigned char *p, size_t n)
{
	size_t j = 0;
	for (; j < n && ((uintptr_t)(p + j) & 7); j++)
		if (p[j])
			return j;
	for (; j + 64 <= n; j += 64) {
		const sh_u64 *q = (const sh_u64 *)(p + j);
		if (q[0] | q[1] | q[2] | q[3] | q[4] | q[5] | q[6] | q[7])
			break;
	}
	for (; j < n; j++)
		if (p[j])
			return j;
	return n;
}

static int sh_check_zero(struct sh_thread *t, const unsigned char *p, size_t n, const char *what,
			 size_t elem)
{
	size_t bad = sh_first_nonzero(p, n);
	SH_ADD(callocs, 1);
	SH_ADD(calloc_bytes, n);
	if (bad == n)
		return 0;
	size_t nz = 0, pages = 0, lastpage = (size_t)-1, last = bad;
	for (size_t j = bad; j < n; j++)
		if (p[j]) {
			nz++;
			last = j;
			if (j / 4096 != lastpage) {
				pages++;
				lastpage = j / 4096;
			}
		}
	sh_error(t,
		 "%s: thread %d: %s(%zu, %zu) = %p not zero: byte %zu is 0x%02x; %zu non-zero "
		 "bytes in [%zu, %zu], in %zu pages (the block's offset in its 2 MiB page: %zu)",
		 t->cfg->name, t->id, what, n / elem, elem, (void *)p, bad, p[bad], nz, bad, last,
		 pages, (size_t)((uintptr_t)p & (2 * SH_MIB - 1)));
	return -1;
}

/* A NULL result: errno must be ENOMEM. */
static int sh_null(struct sh_thread *t, const char *what, size_t n, int err)
{
	if (err != ENOMEM) {
		sh_error(t, "%s: thread %d: %s(%zu) returned NULL with errno %d (%s), not ENOMEM",
			 t->cfg->name, t->id, what, n, err, strerror(err));
		return -1;
	}
	SH_ADD(nulls, 1);
	return 0;
}

static int sh_usable(struct sh_thread *t, const struct sh_block *b)
{
	size_t u = malloc_usable_size(b->p);
	if (u < b->n) {
		sh_error(t, "%s: thread %d: %s(%zu) = %p: malloc_usable_size %zu", t->cfg->name,
			 t->id, b->from, b->n, (void *)b->p, u);
		return -1;
	}
	return 0;
}

/* ---- the operations ---- */

/* A new block into *b (b->p NULL after an allowed failure). */
static int sh_alloc(struct sh_thread *t, struct sh_block *b)
{
	b->p = NULL;
	size_t n = sh_size(t);
	unsigned r = (unsigned)sh_below(t, 100);
	void *p = NULL;
	int e;
	const char *what;
	if (r < 40) {
		what = "malloc";
		errno = 0;
		p = malloc(n);
		e = errno;
		if (!p) {
			SH_ADD(null_malloc, 1);
			return sh_null(t, what, n, e);
		}
	} else if (r < 75) {
		static const size_t elems[] = {1, 1, 8, 16, 24, 4096};
		size_t elem = elems[sh_below(t, sizeof elems / sizeof elems[0])];
		size_t count = (n + elem - 1) / elem;
		n = count * elem;
		what = "calloc";
		errno = 0;
		p = calloc(count, elem);
		e = errno;
		if (!p) {
			SH_ADD(null_calloc, 1);
			return sh_null(t, what, n, e);
		}
		if (sh_check_zero(t, p, n, what, elem))
			return -1;
	} else if (r < 90) {
		size_t align = (size_t)8 << sh_below(t, 14); /* 8 B .. 64 KiB */
		if (!sh_below(t, 8))
			align = 2 * SH_MIB;
		what = "posix_memalign";
		p = (void *)1;
		e = posix_memalign(&p, align, n);
		if (e) {
			SH_ADD(null_memalign, 1);
			return sh_null(t, what, n, e);
		}
		if (!p || ((uintptr_t)p & (align - 1))) {
			sh_error(t, "%s: thread %d: posix_memalign(%zu, %zu) = %p: not aligned",
				 t->cfg->name, t->id, align, n, p);
			return -1;
		}
	} else {
		what = "realloc(NULL)";
		errno = 0;
		p = realloc(NULL, n);
		e = errno;
		if (!p) {
			SH_ADD(null_realloc, 1);
			return sh_null(t, what, n, e);
		}
	}
	*b = (struct sh_block){.p = p, .n = n, .from = what};
	SH_ADD(bytes, n);
	if (sh_usable(t, b))
		return -1;
	sh_fill(t, b);
	return 0;
}

static int sh_free(struct sh_thread *t, struct sh_block *b)
{
	if (sh_check(t, b, "before free"))
		return -1;
	free(b->p);
	b->p = NULL;
	return 0;
}

static int sh_realloc(struct sh_thread *t, struct sh_block *b)
{
	size_t n;
	unsigned r = (unsigned)sh_below(t, 4);
	if (r == 0) /* grow a little: in place, where the allocator can */
		n = b->n + 1 + (size_t)sh_below(t, b->n / 4 + 4096);
	else if (r == 1) /* shrink */
		n = 1 + (size_t)sh_below(t, b->n);
	else
		n = sh_size(t);
	if (n > SH_MAX_SIZE)
		n = SH_MAX_SIZE;
	if (sh_check(t, b, "before realloc"))
		return -1;
	errno = 0;
	unsigned char *p = realloc(b->p, n);
	int e = errno;
	if (!p) {
		SH_ADD(null_realloc, 1);
		if (sh_null(t, "realloc", n, e))
			return -1;
		return sh_check(t, b, "after a failed realloc"); /* the old block is still ours */
	}
	size_t keep = b->n < n ? b->n : n;
	struct sh_block old = *b;
	b->p = p;
	b->n = n;
	b->from = "realloc";
	SH_ADD(bytes, n);
	if (sh_check_range(t, b, 0, keep, "after realloc (the prefix)")) {
		sh_say("%s: thread %d: (realloc of %p, %zu bytes, to %zu bytes: %p)", t->cfg->name,
		       t->id, (void *)old.p, old.n, n, (void *)p);
		return -1;
	}
	if (sh_usable(t, b))
		return -1;
	sh_fill(t, b);
	return 0;
}

static int sh_memset(struct sh_thread *t, struct sh_block *b)
{
	int c = sh_below(t, 2) ? 0 : (int)(1 + sh_below(t, 255));
	if (sh_below(t, 2)) { /* the whole block */
		memset(b->p, c, b->n);
		b->fill = c;
		return sh_check(t, b, "after memset of the whole block");
	}
	/* A range, its neighbours (64 B each side) checked untouched. */
	size_t from = (size_t)sh_below(t, b->n), len = 1 + (size_t)sh_below(t, b->n - from);
	size_t lo = from > 64 ? from - 64 : 0, hi = from + len + 64 < b->n ? from + len + 64 : b->n;
	memset(b->p + from, c, len);
	struct sh_block in = *b;
	in.fill = c;
	if (sh_check_range(t, &in, from, from + len, "after memset of a range") ||
	    sh_check_range(t, b, lo, from, "before a memset range") ||
	    sh_check_range(t, b, from + len, hi, "after a memset range"))
		return -1;
	if (b->fill == SH_PATTERN)
		sh_fill_range(b, from, from + len);
	else
		memset(b->p + from, b->fill, len);
	return 0;
}

/* In a forked child: some of the parent thread's blocks, then its own
 * callocs. Exits 0, or 3 after an error. */
static void sh_child(struct sh_thread *t)
{
	sh_in_child = 1;
	alarm(30);
	int slots = t->cfg->slots;
	for (int k = 0, seen = 0; k < slots && seen < 4; k++) {
		struct sh_block *b = &t->b[k];
		if (!b->p)
			continue;
		seen++;
		if (b->n <= 8 * SH_MIB && sh_check(t, b, "in a forked child"))
			_exit(3);
	}
	for (int k = 0; k < 4; k++) {
		struct sh_block b = {0};
		if (sh_alloc(t, &b))
			_exit(3);
		if (b.p && sh_free(t, &b))
			_exit(3);
	}
	_exit(0);
}

static int sh_fork(struct sh_thread *t)
{
	SH_ADD(forks, 1);
	pid_t pid = fork();
	if (pid < 0) {
		if (errno == EAGAIN || errno == ENOMEM)
			return 0; /* the system's limit, not the allocator */
		sh_error(t, "%s: thread %d: fork: %s", t->cfg->name, t->id, strerror(errno));
		return -1;
	}
	if (pid == 0)
		sh_child(t);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			sh_error(t, "%s: thread %d: waitpid: %s", t->cfg->name, t->id,
				 strerror(errno));
			return -1;
		}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		sh_error(t, "%s: thread %d: forked child %d killed by signal %d (%s)%s",
			 t->cfg->name, t->id, (int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)),
			 WTERMSIG(st) == SIGALRM ? ": it hung" : "");
	else
		sh_error(t, "%s: thread %d: forked child %d exited %d", t->cfg->name, t->id,
			 (int)pid, WEXITSTATUS(st));
	return -1;
}

static int sh_op(struct sh_thread *t)
{
	const struct sh_config *c = t->cfg;
	if (c->fork_every && !sh_below(t, c->fork_every))
		return sh_fork(t);
	if (c->trim_every && !sh_below(t, c->trim_every)) {
		SH_ADD(trims, 1);
		malloc_trim(0);
		return 0;
	}
	struct sh_block *b = &t->b[sh_below(t, (uint64_t)c->slots)];
	if (!b->p)
		return sh_alloc(t, b);
	unsigned r = (unsigned)sh_below(t, 100);
	if (r < 40)
		return sh_free(t, b);
	if (r < 70)
		return sh_realloc(t, b);
	if (r < 85)
		return sh_memset(t, b);
	return sh_check(t, b, "a check of a live block");
}

/* The fault shim's switch (faultshim.c, FAULT_ARM=1), where it is loaded. */
extern void faultshim_arm(void) __attribute__((weak));
static int sh_warm;

static void *sh_thread_main(void *arg)
{
	struct sh_thread *t = arg;
	const struct sh_config *c = t->cfg;
	unsigned long ops = 0;
	/* A first allocation on every thread, then faults (FAULT_ARM). */
	void *volatile first = malloc(16);
	free(first);
	if (__atomic_add_fetch(&sh_warm, 1, __ATOMIC_ACQ_REL) == c->threads && faultshim_arm)
		faultshim_arm();
	for (long i = 0; c->iters ? i < c->iters : 1; i++) {
		if (__atomic_load_n(&sh_stop, __ATOMIC_RELAXED))
			break;
		if (!c->iters && (i & 15) == 0 && sh_now() >= sh_deadline)
			break;
		if (sh_op(t))
			break;
		ops++;
		if ((ops & 255) == 0) {
			SH_ADD(ops, 256);
			ops = 0;
		}
	}
	SH_ADD(ops, ops);
	if (__atomic_load_n(&sh_stop, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&sh_tot.errors, __ATOMIC_RELAXED))
		return NULL; /* after an error, leave the blocks as they are */
	for (int k = 0; k < c->slots; k++)
		if (t->b[k].p && sh_free(t, &t->b[k]))
			break;
	return NULL;
}

static void sh_print_progress(const char *name, double t0)
{
	sh_say("%s: progress %.0f s ops %lu bytes %lu callocs %lu forks %lu trims %lu nulls %lu "
	       "errors %lu",
	       name, sh_now() - t0, __atomic_load_n(&sh_tot.ops, __ATOMIC_RELAXED),
	       __atomic_load_n(&sh_tot.bytes, __ATOMIC_RELAXED),
	       __atomic_load_n(&sh_tot.callocs, __ATOMIC_RELAXED),
	       __atomic_load_n(&sh_tot.forks, __ATOMIC_RELAXED),
	       __atomic_load_n(&sh_tot.trims, __ATOMIC_RELAXED),
	       __atomic_load_n(&sh_tot.nulls, __ATOMIC_RELAXED),
	       __atomic_load_n(&sh_tot.errors, __ATOMIC_RELAXED));
}

/* Runs the workload; returns the number of errors (totals in *out). */
static unsigned long sh_run(struct sh_config *cfg, struct sh_totals *out)
{
	static struct sh_thread threads[64];
	if (cfg->threads < 1)
		cfg->threads = 1;
	if (cfg->threads > 64)
		cfg->threads = 64;
	if (cfg->slots < 1 || cfg->slots > SH_SLOTS_MAX)
		cfg->slots = 48;
	double t0 = sh_now();
	sh_deadline = t0 + cfg->seconds;
	int started = 0;
	for (int i = 0; i < cfg->threads; i++) {
		struct sh_thread *t = &threads[i];
		t->id = i;
		t->cfg = cfg;
		t->rng =
			cfg->seed * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xd1b54a32d192ed03ull + 1;
		int e, tries = 0;
		/* EAGAIN may be the fault shim's: try again, as a program would. */
		while ((e = pthread_create(&t->tid, NULL, sh_thread_main, t)) == EAGAIN &&
		       ++tries < 10000)
			sched_yield();
		if (e) {
			sh_error(t, "%s: pthread_create: %s", cfg->name, strerror(e));
			break;
		}
		started++;
	}
	if (cfg->progress_s > 0 && !cfg->iters) {
		double next = t0 + cfg->progress_s;
		while (!__atomic_load_n(&sh_stop, __ATOMIC_RELAXED) && sh_now() < sh_deadline) {
			struct timespec ts = {0, 200 * 1000 * 1000};
			nanosleep(&ts, NULL);
			if (sh_now() >= next) {
				sh_print_progress(cfg->name, t0);
				next += cfg->progress_s;
			}
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(threads[i].tid, NULL);
	sh_tot.seconds = sh_now() - t0;
	*out = sh_tot;
	return sh_tot.errors;
}

#endif
