/* The background zeroer in a real process (run by zeroer.sh with the
 * library preloaded); each mode exits 0 when what it checks holds, and
 * says what failed otherwise:
 *
 *   stress SECONDS  4 threads calloc, malloc, realloc and free large blocks
 *                   (1-48 MiB) while the zeroer clears what they free; every
 *                   calloc'd block is checked zero, every block is filled
 *                   with its own pattern and checked unchanged before it is
 *                   freed (a byte the zeroer wrote into a live block fails).
 *   fork ROUNDS     frees 256 MiB of blocks and forks at once, while the
 *                   zeroer clears them: the child's callocs of the same
 *                   sizes read zero, and it exits.
 *   exit            frees 1 GiB of blocks and exits at once, printing when
 *                   (CLOCK_MONOTONIC): zeroer.sh times the rest.
 *   small           small allocations only: no thread is started.
 *   seccomp         with sched_setscheduler refused by a seccomp filter,
 *                   the zeroer runs at nice 19 and counts the fallback. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define PAGE 4096

static int (*stat_fn)(const char *, uint64_t *);

static uint64_t stat(const char *name)
{
	uint64_t v = 0;
	if (!stat_fn)
		stat_fn = (int (*)(const char *, uint64_t *))dlsym(RTLD_DEFAULT, "hz_stat");
	if (!stat_fn || stat_fn(name, &v)) {
		fprintf(stderr, "zeroer: no counter %s\n", name);
		exit(1);
	}
	return v;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The first byte of every page and a few random ones read zero (every
 * byte of the first and last page). */
static int zero(const unsigned char *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i += PAGE)
		if (p[i])
			return 0;
	for (size_t i = 0; i < PAGE && i < n; i++)
		if (p[i] || p[n - 1 - i])
			return 0;
	for (int k = 0; k < 256; k++)
		if (p[next(seed) % n])
			return 0;
	return 1;
}

/* Every 64th byte of every page, tagged with the block's mark. */
static void fill(unsigned char *p, size_t n, unsigned char mark)
{
	for (size_t i = 0; i < n; i += 64)
		p[i] = (unsigned char)(mark + (i >> 12));
}

static size_t filled_ok(const unsigned char *p, size_t n, unsigned char mark)
{
	for (size_t i = 0; i < n; i += 64)
		if (p[i] != (unsigned char)(mark + (i >> 12)))
			return i + 1;
	return 0;
}

struct slot {
	unsigned char *p;
	size_t n;
	unsigned char mark;
};

static double stop_at;
static int failures;

static void *stress_thread(void *arg)
{
	uint64_t seed = 0x2545f4914f6cdd1dull * ((uintptr_t)arg + 1);
	struct slot s[6] = {{0}};
	unsigned char mark = (unsigned char)((uintptr_t)arg * 50);
	while (now() < stop_at) {
		struct slot *b = &s[next(&seed) % 6];
		if (b->p) {
			size_t at = filled_ok(b->p, b->n, b->mark);
			if (at) {
				fprintf(stderr, "zeroer: byte %zu of a live %zu-byte block changed\n", at - 1, b->n);
				__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
			}
			if (next(&seed) % 4 == 0) { /* grow or shrink in place or moved */
				size_t n = (1 + next(&seed) % 48) * MIB - next(&seed) % 3 * PAGE;
				unsigned char *q = realloc(b->p, n);
				if (!q) {
					fprintf(stderr, "zeroer: realloc failed\n");
					__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
					continue;
				}
				size_t keep = b->n < n ? b->n : n;
				size_t at2 = filled_ok(q, keep & ~(size_t)63, b->mark);
				if (at2) {
					fprintf(stderr, "zeroer: byte %zu changed across realloc\n", at2 - 1);
					__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
				}
				b->p = q;
				b->n = n;
				fill(q, n, b->mark);
				continue;
			}
			free(b->p);
			b->p = NULL;
			/* Now and then some idle time, for the zeroer to start on
			 * what was freed, and the same size again at once: the
			 * block it is clearing, taken while it clears. */
			if (next(&seed) % 2)
				usleep((useconds_t)(next(&seed) % 1500));
			if (next(&seed) % 2)
				continue;
		}
		if (!b->n || next(&seed) % 2)
			b->n = (1 + next(&seed) % 48) * MIB - next(&seed) % 3 * PAGE;
		b->mark = ++mark;
		if (next(&seed) % 3) {
			b->p = calloc(1, b->n);
			if (b->p && !zero(b->p, b->n, &seed)) {
				fprintf(stderr, "zeroer: a calloc'd %zu-byte block is not zero\n", b->n);
				__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
			}
		} else {
			b->p = malloc(b->n);
		}
		if (!b->p) {
			fprintf(stderr, "zeroer: allocation of %zu bytes failed\n", b->n);
			__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
			continue;
		}
		fill(b->p, b->n, b->mark);
	}
	for (int i = 0; i < 6; i++)
		free(s[i].p);
	return NULL;
}

static int stress(double seconds)
{
	pthread_t t[4];
	stop_at = now() + seconds;
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, stress_thread, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	uint64_t cleared = stat("background.cleared_bytes");
	printf("precleared %llu MiB, waits %llu, abandoned %llu MiB, caller cleared %llu MiB\n",
	       (unsigned long long)(cleared >> 20), (unsigned long long)stat("background.waits"),
	       (unsigned long long)(stat("background.abandoned_bytes") >> 20),
	       (unsigned long long)(stat("large.cleared_caller_bytes") >> 20));
	if (!cleared) {
		fprintf(stderr, "zeroer: the zeroer cleared nothing\n");
		return 1;
	}
	return failures != 0;
}

static int forks(int rounds)
{
	uint64_t seed = 88172645463325252ull;
	for (int r = 0; r < rounds; r++) {
		unsigned char *b[8];
		for (int i = 0; i < 8; i++) {
			b[i] = malloc(32 * MIB - (size_t)i * PAGE);
			memset(b[i], 0xa5, 32 * MIB - (size_t)i * PAGE);
		}
		for (int i = 0; i < 8; i++)
			free(b[i]);
		pid_t pid = fork();
		if (pid == 0) {
			if (stat("background.running") || stat("background.starts")) {
				fprintf(stderr, "zeroer: the child has a zeroer before it needs one\n");
				_exit(1);
			}
			for (int i = 0; i < 8; i++) {
				unsigned char *p = calloc(1, 32 * MIB - (size_t)i * PAGE);
				if (!p || !zero(p, 32 * MIB - (size_t)i * PAGE, &seed)) {
					fprintf(stderr, "zeroer: the child's calloc is not zero\n");
					_exit(1);
				}
				memset(p, 0x5a, 1 << 20);
			}
			_exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "zeroer: child of round %d failed (status %d)\n", r, st);
			return 1;
		}
	}
	return 0;
}

static int exits(void)
{
	unsigned char *b[32];
	for (int i = 0; i < 32; i++) {
		b[i] = malloc(32 * MIB);
		memset(b[i], 0xa5, 32 * MIB);
	}
	for (int i = 0; i < 32; i++)
		free(b[i]);
	if (!stat("background.running")) {
		fprintf(stderr, "zeroer: no zeroer running at exit\n");
		return 1;
	}
	/* When exit began, on the clock the driver reads when it ended. */
	printf("%.6f\n", now());
	fflush(stdout);
	exit(0);
}

static int small(void)
{
	void *p[1000];
	for (int r = 0; r < 100; r++) {
		for (int i = 0; i < 1000; i++)
			p[i] = calloc(1, 16 + (size_t)i * 600);
		for (int i = 0; i < 1000; i++)
			free(p[i]);
	}
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int threads = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &threads) == 1)
			break;
	if (f)
		fclose(f);
	if (threads != 1 || stat("background.starts") || stat("background.running")) {
		fprintf(stderr, "zeroer: %d threads, %llu zeroer starts after small allocations\n", threads,
			(unsigned long long)stat("background.starts"));
		return 1;
	}
	return 0;
}

/* Refuses sched_setscheduler with EPERM (a container's policy may). */
static int refuse_sched(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sched_setscheduler, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("zeroer: seccomp");
		return -1;
	}
	return 0;
}

static int seccomp(void)
{
	if (refuse_sched())
		return 1;
	void *p = calloc(1, 8 * MIB);
	free(p);
	for (int i = 0; i < 200 && !stat("background.running"); i++)
		usleep(5000);
	for (int i = 0; i < 200 && !stat("background.sched_fallbacks"); i++)
		usleep(5000);
	if (stat("background.sched_fallbacks") != 1 || stat("background.sched") != 1) {
		fprintf(stderr, "zeroer: fallbacks %llu, sched %llu (want 1, 1: nice 19)\n",
			(unsigned long long)stat("background.sched_fallbacks"),
			(unsigned long long)stat("background.sched"));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "stress"))
		return stress(atof(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "fork"))
		return forks(atoi(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "exit"))
		return exits();
	if (argc >= 2 && !strcmp(argv[1], "small"))
		return small();
	if (argc >= 2 && !strcmp(argv[1], "seccomp"))
		return seccomp();
	fprintf(stderr, "usage: zeroer stress SECONDS | fork ROUNDS | exit | small | seccomp\n");
	return 2;
}
