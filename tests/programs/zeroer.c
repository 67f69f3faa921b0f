/* The background zeroer in a real process (run by zeroer.sh with the
 * library preloaded); each mode exits 0 when what it checks holds, and
 * says what failed otherwise:
 *
 *   stress SECONDS  8 threads (two an arena) calloc, malloc, realloc, free
 *                   and trim large blocks (1-48 MiB) shared between them
 *                   while the zeroer clears what they free; every calloc'd
 *                   block is checked zero, every block is filled with its
 *                   own pattern and checked unchanged before it is freed or
 *                   resized (a byte the zeroer wrote into a live block fails).
 *   fork ROUNDS     frees 256 MiB of blocks and forks at once, while the
 *                   zeroer clears them: the child's callocs of the same
 *                   sizes read zero, and it exits.
 *   exit            frees 1 GiB of blocks and exits at once, printing when
 *                   (CLOCK_MONOTONIC): zeroer.sh times the rest.
 *   small           small allocations only: no thread is started.
 *   reserve         fresh blocks kept, found in memory; the reserve within
 *                   its limit, gone after the decay; the idle thread ends.
 *   faulting        nothing populated while the program faults, the
 *                   reserve filled once it idles (root: SCHED_FIFO).
 *   quiet           with no reserve to fill, a second of page faults costs
 *                   the zeroer a few context switches, not one a ms.
 *   blind           started under a filter refusing getrusage (seccomp),
 *                   nothing populated and no polling.
 *   unpaid          no more population once what it populated is released
 *                   unused (malloc_trim after each idle gap).
 *   seccomp         started under a filter refusing sched_setscheduler,
 *                   the zeroer runs at nice 19 and counts the fallback. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
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

/* Every 64th byte reads zero (where fill writes: a stale byte of an
 * earlier block, cleared in part, shows there), and every byte of the first
 * and last page and 256 random ones. */
static int zero(const unsigned char *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i += 64)
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

/* Blocks shared by all threads, each behind its own lock: a block is
 * freed or resized by whichever thread comes next, often another one than
 * made it, in another arena. */
#define SLOTS 24
static struct slot {
	pthread_mutex_t lock;
	unsigned char *p;
	size_t n;
	unsigned char mark;
} slots[SLOTS];

static double stop_at;
static int failures;
static unsigned char marks;

static void fail(const char *what, size_t a, size_t b)
{
	fprintf(stderr, "zeroer: %s (%zu, %zu)\n", what, a, b);
	__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
}

static void *stress_thread(void *arg)
{
	uint64_t seed = 0x2545f4914f6cdd1dull * ((uintptr_t)arg + 1);
	while (now() < stop_at) {
		struct slot *b = &slots[next(&seed) % SLOTS];
		if (pthread_mutex_trylock(&b->lock))
			continue;
		if (b->p) {
			size_t at = filled_ok(b->p, b->n, b->mark);
			if (at)
				fail("a byte of a live block changed (offset, size)", at - 1, b->n);
			if (next(&seed) % 4 == 0) { /* grow or shrink in place or moved */
				size_t n = (1 + next(&seed) % 48) * MIB - next(&seed) % 3 * PAGE;
				unsigned char *q = realloc(b->p, n);
				if (!q) {
					fail("realloc failed", n, 0);
				} else {
					size_t keep = b->n < n ? b->n : n;
					size_t at2 = filled_ok(q, keep & ~(size_t)63, b->mark);
					if (at2)
						fail("a byte changed across realloc", at2 - 1, n);
					b->p = q;
					b->n = n;
					fill(q, n, b->mark);
				}
				pthread_mutex_unlock(&b->lock);
				continue;
			}
			free(b->p);
			b->p = NULL;
			pthread_mutex_unlock(&b->lock);
			/* Now and then idle time, for the zeroer to start on what
			 * was freed; a trim, which waits for its piece. */
			if (next(&seed) % 2)
				usleep((useconds_t)(next(&seed) % 1500));
			if (next(&seed) % 64 == 0)
				malloc_trim(0);
			continue;
		}
		/* The size freed last here again half the time: the block the
		 * zeroer is clearing, taken while it clears. */
		if (!b->n || next(&seed) % 2)
			b->n = (1 + next(&seed) % 48) * MIB - next(&seed) % 3 * PAGE;
		b->mark = __atomic_add_fetch(&marks, 1, __ATOMIC_RELAXED);
		if (next(&seed) % 3) {
			b->p = calloc(1, b->n);
			if (b->p && !zero(b->p, b->n, &seed))
				fail("a calloc'd block is not zero (size)", b->n, 0);
		} else {
			b->p = malloc(b->n);
		}
		if (!b->p)
			fail("an allocation failed (size)", b->n, 0);
		else
			fill(b->p, b->n, b->mark);
		pthread_mutex_unlock(&b->lock);
	}
	return NULL;
}

static int stress(double seconds)
{
	pthread_t t[8];
	for (int i = 0; i < SLOTS; i++)
		pthread_mutex_init(&slots[i].lock, NULL);
	stop_at = now() + seconds;
	for (uintptr_t i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, stress_thread, (void *)i);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < SLOTS; i++)
		free(slots[i].p);
	/* At SCHED_IDLE it may have had no CPU while 8 threads ran on a
	 * small machine: what they freed last it clears now. */
	for (int i = 0; i < 2000 && !stat("background.cleared_bytes"); i++)
		usleep(1000);
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
	alarm(120); /* a hang fails */
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
	for (int i = 0; i < 100 && !stat("background.running"); i++)
		usleep(1000); /* started: running once it is scheduled */
	if (!stat("background.running")) {
		fprintf(stderr, "zeroer: no zeroer running at exit\n");
		return 1;
	}
	/* When exit began, on the clock the driver reads when it ended. */
	printf("%.6f\n", now());
	fflush(stdout);
	exit(0);
}

/* The reserve waits for the program to stop faulting: a block of fresh
 * memory touched page by page for about 150 ms, every touch a fault and
 * no millisecond between two of them, sees at most one population that
 * had begun before the touch (2 MiB: a claim is within one huge page);
 * once the program idles, the reserve fills. With HUGEZERO_RESERVE=16M.
 *
 * Both need CPU on a busy host: this thread runs at SCHED_FIFO (root), so
 * that no other process preempts its touch for a time slice (a pause of
 * a millisecond, after which the reserve may rightly fill), and the
 * zeroer too once the touch has begun, so that it looks at the program's
 * faults every millisecond as it would on an idle core (at SCHED_IDLE it
 * may get no CPU at all; raised before the touch, it would fill the
 * reserve while the program is still quiet).
 *
 * A try says nothing, and the program runs again as a new process with
 * an empty reserve (ZEROER_TRY counts the tries), when the touch paused
 * for a millisecond all the same (a fault the host was slow to back),
 * when the block had pages in memory (the reserve's), when the reserve
 * held more than one claim before the touch, or when the zeroer was not
 * raised or had no CPU during it. After 8 such tries the case fails. */
#define TRIES 8
static uint64_t thread_faults(void)
{
	struct rusage u;
	return getrusage(RUSAGE_THREAD, &u) ? 0 : (uint64_t)u.ru_minflt;
}

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The thread at SCHED_IDLE other than this one (the zeroer: the only
 * one, with blocks below the helpers' 64 MiB) set to SCHED_FIFO: 1, 0
 * where there is none (not started, or not yet lowered: its first act),
 * -1 where that was refused. */
static int raise_zeroer(void)
{
	int self = (int)syscall(SYS_gettid), raised = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));) {
		int tid = atoi(e->d_name);
		struct sched_param sp = {1};
		if (tid <= 0 || tid == self || sched_getscheduler(tid) != SCHED_IDLE)
			continue;
		if (!sched_setscheduler(tid, SCHED_FIFO, &sp))
			raised = 1;
		else if (errno != ESRCH)
			raised = -1;
	}
	closedir(d);
	return raised;
}

/* The program's peak resident bytes so far: its address space's
 * high-water mark (VmHWM; getrusage's ru_maxrss also holds the peak of the
 * process this one was exec'd from). */
static uint64_t peak_rss(void)
{
	char line[256];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		exit(3);
	while (fgets(line, sizeof line, f) && sscanf(line, "VmHWM: %llu", &kib) != 1)
		;
	fclose(f);
	if (!kib)
		exit(3);
	return (uint64_t)kib << 10;
}

/* Raises the process's peak by `bytes` touched and unmapped, outside the
 * allocator: the reserve fills only below that peak, never above it. */
static void make_room(size_t bytes)
{
	unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		exit(3);
	for (size_t k = 0; k < bytes; k += PAGE)
		m[k] = 1;
	munmap(m, bytes);
}

/* The zeroer, started, given a core as on an idle host (root): waited
 * for to lower itself to SCHED_IDLE, its first act, up to a second, then
 * set to SCHED_FIFO. At SCHED_IDLE on a busy host it may get no CPU for
 * the whole case. Where that is refused (not root), it stays as it is. */
static void give_zeroer_a_core(void)
{
	for (int i = 0; i < 1000 && !raise_zeroer(); i++)
		usleep(1000);
}

static int faulting(char **argv)
{
	struct sched_param fifo = {1};
	if (sched_setscheduler(0, SCHED_FIFO, &fifo)) {
		perror("zeroer: faulting needs SCHED_FIFO (root)");
		return 1;
	}
	make_room(128 * MIB);
	/* Kept: an arena's first block says nothing of the next, and the
	 * second is then all fresh pages, each touch a fault. */
	unsigned char *first = calloc(1, 4 * MIB);
	unsigned char *b = calloc(1, 24 * MIB); /* in a chunk: pages the reserve refills */
	static unsigned char in_memory[24 * MIB / PAGE];
	if (!first || !b || (uintptr_t)b % PAGE) /* large blocks start a page */
		return 1;
	const char *try_env = getenv("ZEROER_TRY");
	int try = try_env ? atoi(try_env) : 0;
	size_t resident = 0;
	if (!mincore(b, 24 * MIB, in_memory))
		for (size_t k = 0; k < sizeof in_memory; k++)
			resident += in_memory[k] & 1;
	uint64_t before = stat("background.populated_bytes"), held = stat("reserve.bytes");
	uint64_t cpu = stat("background.cpu_time_ns"), seen = thread_faults(), faults = 0;
	uint64_t last = mono_ns(), gap = 0;
	int raised = 0;
	for (size_t k = 0; k < 24 * MIB; k += PAGE) {
		b[k] = 1;
		/* 64 faults (1.6 ms) on: the zeroer has seen the program fault. */
		if (raised <= 0 && k >= 64 * PAGE && k % (64 * PAGE) == 0 && (raised = raise_zeroer()) < 0) {
			perror("zeroer: the zeroer at SCHED_FIFO");
			return 1;
		}
		uint64_t at = mono_ns(), now_faults = thread_faults();
		if (now_faults != seen) {
			faults += now_faults - seen;
			seen = now_faults;
			gap = at - last > gap ? at - last : gap;
			last = at;
		}
		while (mono_ns() - at < 25000) /* about 25 us a page: the touch lasts about 150 ms */
			;
	}
	uint64_t end = mono_ns();
	gap = end - last > gap ? end - last : gap;
	uint64_t during = stat("background.populated_bytes") - before;
	cpu = stat("background.cpu_time_ns") - cpu;
	/* The zeroer's quiet is 1 ms (zeroer.c). */
	int judged = gap < 1000000 && !resident && faults >= 24 * MIB / PAGE && held <= 2 * MIB && raised && cpu;
	if (!judged) {
		fprintf(stderr,
			"zeroer: try %d says nothing (%llu faults, longest gap %llu us, %zu pages in memory, "
			"reserve %llu KiB, zeroer %s, %llu us of CPU)\n",
			try, (unsigned long long)faults, (unsigned long long)(gap / 1000), resident,
			(unsigned long long)(held >> 10), raised ? "raised" : "not raised", (unsigned long long)(cpu / 1000));
		if (try + 1 >= TRIES) {
			fprintf(stderr, "zeroer: no try of %d judged\n", TRIES);
			return 1;
		}
		char n[16];
		snprintf(n, sizeof n, "%d", try + 1);
		setenv("ZEROER_TRY", n, 1);
		execv("/proc/self/exe", argv);
		return 1;
	}
	before = stat("background.populated_bytes");
	usleep(300000);
	uint64_t idle = stat("background.populated_bytes") - before, reserve = stat("reserve.bytes");
	/* Filled once idle, or full already (populated before the touch, in
	 * pages the block did not take). */
	if (during > 2 * MIB || (!idle && reserve < 16 * MIB)) {
		fprintf(stderr, "zeroer: %llu KiB populated while the program faulted (%llu faults, longest gap %llu us), %llu KiB once idle, reserve %llu KiB\n",
			(unsigned long long)(during >> 10), (unsigned long long)faults, (unsigned long long)(gap / 1000),
			(unsigned long long)(idle >> 10), (unsigned long long)(reserve >> 10));
		return 1;
	}
	printf("populated %llu KiB while faulting (%llu faults, longest gap %llu us, try %d), %llu KiB once idle, reserve %llu KiB\n",
	       (unsigned long long)(during >> 10),
	       (unsigned long long)faults, (unsigned long long)(gap / 1000), try, (unsigned long long)(idle >> 10),
	       (unsigned long long)(reserve >> 10));
	free(b);
	free(first);
	return 0;
}

/* System call nr refused with EPERM by a seccomp filter, from now on, in
 * every thread made after. A filter installed at run time ends the
 * library's threads for good (the filter was written for the program's
 * own calls), so the cases that test a thread under a filter install it,
 * then run again under it (execv), as a service started under one
 * (systemd's SystemCallFilter) is. */
static int refuse(long nr)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
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

/* This program run again with argv under a filter refusing nr. */
static int under_filter(long nr, char **argv)
{
	if (refuse(nr) || setenv("ZEROER_FILTERED", "1", 1))
		return 1;
	execv("/proc/self/exe", argv);
	perror("zeroer: execv");
	return 1;
}

/* The voluntary context switches of this process's threads but the
 * caller (the zeroer's, in a single-threaded program), and how many
 * such threads there are. */
static uint64_t others_switches(int *threads)
{
	uint64_t sum = 0;
	*threads = 0;
	DIR *d = opendir("/proc/self/task");
	for (struct dirent *e; d && (e = readdir(d));) {
		char path[300], line[256];
		if (e->d_name[0] == '.' || atoi(e->d_name) == (int)syscall(SYS_gettid))
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		FILE *f = fopen(path, "r");
		unsigned long long v;
		while (f && fgets(line, sizeof line, f))
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
				sum += v, ++*threads;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

/* With no reserve (HUGEZERO_RESERVE=0) the zeroer has nothing to wait
 * for while the program faults: after a large free has started it, a
 * second of faults (a page every 50 us) costs it a few context switches
 * (its decay ticks), not one a millisecond of polling. */
static int quiet(void)
{
	free(calloc(1, 8 * MIB)); /* starts the zeroer, which clears the block */
	usleep(100000);
	int threads, after_threads;
	uint64_t before = others_switches(&threads);
	size_t len = 64 * MIB;
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	madvise(m, len, MADV_NOHUGEPAGE);
	for (size_t k = 0; k < len; k += 4 * PAGE) {
		m[k] = 1;
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 50000);
	}
	uint64_t switches = others_switches(&after_threads) - before;
	munmap(m, len);
	if (threads != 1 || after_threads != 1 || switches > 20) {
		fprintf(stderr, "zeroer: %d thread(s) before, %d after; %llu context switches in 0.8 s of faults\n",
			threads, after_threads, (unsigned long long)switches);
		return 1;
	}
	printf("%llu context switches of the zeroer in 0.8 s of faults\n", (unsigned long long)switches);
	return 0;
}

/* A block taken again soon after its free, 200 times (a buffer per
 * request, back to back; the program pauses 30 us between the free and
 * the calloc, long enough for a woken zeroer to claim the block): the
 * zeroer leaves it to the program, which takes it at once; it never
 * makes the program wait for its clear nor clears what the program
 * clears again (in at most a tenth of the rounds, for a busy host). */
static int recycle(void)
{
	size_t n = 32 * MIB;
	int rounds = 200;
	unsigned char *p = calloc(1, n);
	for (int r = 0; r < rounds && p; r++) {
		for (size_t i = 0; i < n; i += PAGE)
			p[i] = 1;
		free(p);
		double t0 = now();
		while (now() - t0 < 30e-6)
			;
		p = calloc(1, n);
		for (size_t i = 0; p && i < n; i += PAGE)
			if (p[i]) {
				fprintf(stderr, "zeroer: calloc returned a non-zero byte\n");
				return 1;
			}
	}
	if (!p)
		return 1;
	free(p);
	uint64_t waits = stat("background.waits"), abandoned = stat("background.abandoned_bytes");
	if (waits > (uint64_t)rounds / 10 || abandoned > (uint64_t)rounds / 10 * 4 * MIB) {
		fprintf(stderr, "zeroer: %llu waits and %llu MiB cleared, then abandoned, in %d rounds\n",
			(unsigned long long)waits, (unsigned long long)(abandoned >> 20), rounds);
		return 1;
	}
	printf("%llu waits, %llu MiB abandoned in %d rounds\n", (unsigned long long)waits,
	       (unsigned long long)(abandoned >> 20), rounds);
	return 0;
}

/* 64 live blocks of 3 MiB, one freed and one taken again at once, for
 * 0.3 s (churn_bench sweep's largest size, 1 MiB, is kept whole at its
 * free and kicks nobody; 3 MiB is not): every free kicks the zeroer,
 * which finds the block already taken back. It looks again later, not at
 * each kick: a few dozen context switches and about a millisecond of its
 * CPU, where it looked at once and took every arena's lock beside the
 * program (400-1,400 switches and 34-152 ms in 0.3 s). Once
 * the program frees the 64 and idles, it clears at least 16 MiB of them,
 * or finds them not in memory (its rests are at most 25.6 ms). */
/* A block freed and kept whole (2 MiB, a chunk's first: a whole huge
 * page, which a decay may release), then nothing more: the free starts
 * the zeroer, whose decay's tick gives the block back to its chunk and
 * releases it within a few windows (HUGEZERO_DIRTY_DECAY_MS=300, no
 * reserve). */
static int kept(void)
{
	unsigned char *p = malloc(2 * MIB);
	if (!p)
		return 1;
	memset(p, 0x5a, 2 * MIB);
	free(p);
	uint64_t held = stat("large.kept_bytes");
	give_zeroer_a_core();
	double t0 = now();
	uint64_t left, dirty;
	do {
		usleep(20000);
		left = stat("large.kept_bytes");
		dirty = stat("large.dirty_free_bytes");
	} while ((left || dirty) && now() - t0 < 3);
	uint64_t starts = stat("background.starts");
	if (held != 2 * MIB || left || dirty || !starts) {
		fprintf(stderr,
			"zeroer: %llu bytes kept at the free; %llu kept and %llu free in memory %.2f s after; %llu starts\n",
			(unsigned long long)held, (unsigned long long)left, (unsigned long long)dirty, now() - t0,
			(unsigned long long)starts);
		return 1;
	}
	return 0;
}

#define RETAKE (3 * MIB)
static int retake(void)
{
	unsigned char *live[64];
	uint64_t rng = 88172645463325252ull;
	for (int i = 0; i < 64; i++)
		if (!(live[i] = malloc(RETAKE)))
			return 1;
	long ops = 0;
	int threads = 0, after_threads = 0;
	uint64_t before = 0, cpu = 0;
	/* The first 20 ms start the zeroer (at the first free). */
	for (double t0 = now(), t; (t = now() - t0) < 0.32; ops++) {
		if (t >= 0.02 && !before) {
			before = others_switches(&threads) + 1;
			cpu = stat("background.cpu_time_ns");
		}
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		unsigned char **b = &live[rng % 64];
		free(*b);
		if (!(*b = malloc(RETAKE)))
			return 1;
		(*b)[0] = (*b)[RETAKE - 1] = 1;
	}
	uint64_t switches = others_switches(&after_threads) - (before - 1);
	cpu = stat("background.cpu_time_ns") - cpu;
	/* What it clears, or skips as not in memory (the blocks' first and
	 * last pages only were written), once the program idles: the zeroer
	 * given a core where it can be (give_zeroer_a_core; SCHED_IDLE on a
	 * busy host may get no CPU for seconds), within 3 s. */
	uint64_t cleared = stat("background.cleared_bytes") + stat("background.not_resident_bytes");
	for (int i = 0; i < 64; i++)
		free(live[i]);
	give_zeroer_a_core();
	double t0 = now(), waited;
	uint64_t reached;
	do {
		usleep(10000);
		reached = stat("background.cleared_bytes") + stat("background.not_resident_bytes") - cleared;
	} while (reached < 16 * MIB && (waited = now() - t0) < 3);
	waited = now() - t0;
	if (threads != 1 || after_threads != 1 || switches > 100 || cpu > 20000000u || reached < 16 * MIB) {
		fprintf(stderr,
			"zeroer: %d thread(s) before, %d after; %llu context switches and %llu us of its CPU in %ld "
			"blocks freed and taken again; %llu MiB cleared or found not in memory %.2f s after\n",
			threads, after_threads, (unsigned long long)switches, (unsigned long long)(cpu / 1000), ops,
			(unsigned long long)(reached >> 20), waited);
		return 1;
	}
	printf("%llu context switches of the zeroer and %llu us of its CPU in %ld blocks freed and taken again; "
	       "%llu MiB cleared or found not in memory %.2f s after\n",
	       (unsigned long long)switches, (unsigned long long)(cpu / 1000), ops, (unsigned long long)(reached >> 20),
	       waited);
	return 0;
}

/* Where the program's page faults cannot be counted (getrusage refused
 * by a seccomp filter), the zeroer cannot tell when the program is idle:
 * it populates nothing, and does not poll. With HUGEZERO_RESERVE=16M. */
static int blind(char **argv)
{
	if (!getenv("ZEROER_FILTERED"))
		return under_filter(SYS_getrusage, argv);
	unsigned char *first = calloc(1, 4 * MIB); /* as in faulting() */
	unsigned char *b = calloc(1, 24 * MIB);
	if (!first || !b)
		return 1;
	usleep(100000);
	int threads, after_threads;
	uint64_t before = others_switches(&threads);
	for (size_t k = 0; k < 24 * MIB; k += PAGE)
		b[k] = 1;
	free(b);
	usleep(500000); /* idle: a zeroer that could see it would fill the reserve */
	uint64_t switches = others_switches(&after_threads) - before;
	uint64_t populated = stat("background.populated_bytes");
	free(first);
	if (populated || threads != 1 || switches > 20) {
		fprintf(stderr, "zeroer: %llu KiB populated; %d thread(s), %llu context switches in 0.5 s\n",
			(unsigned long long)(populated >> 10), threads, (unsigned long long)switches);
		return 1;
	}
	printf("nothing populated, %llu context switches in 0.5 s\n", (unsigned long long)switches);
	return 0;
}

/* The zeroer stops what does not pay: a program that idles after each
 * block, then gives its free memory back with malloc_trim before the next,
 * releases everything the zeroer populated or cleared unused; after the
 * first rounds it populates and clears nothing more. With
 * HUGEZERO_RESERVE=16M; the zeroer given a core (give_zeroer_a_core):
 * starved, it populates nothing in the first rounds, and the case says
 * nothing of what it stops. */
static int unpaid(void)
{
	make_room(128 * MIB);
	unsigned char *first = calloc(1, 4 * MIB); /* kept, as in faulting() */
	give_zeroer_a_core();
	uint64_t early = 0, early_cleared = 0;
	for (int r = 0; r < 12; r++) {
		unsigned char *b = calloc(1, 8 * MIB);
		for (size_t k = 0; b && k < 8 * MIB; k += PAGE)
			b[k] = 1;
		free(b);
		usleep(30000); /* idle: the reserve fills */
		malloc_trim(0); /* and is released unused */
		if (r == 2) {
			early = stat("background.populated_bytes");
			early_cleared = stat("background.cleared_bytes");
		}
	}
	uint64_t late = stat("background.populated_bytes") - early, unused = stat("reserve.unused_bytes");
	uint64_t late_cleared = stat("background.cleared_bytes") - early_cleared;
	free(first);
	if (!early || late || unused < early || late_cleared) {
		fprintf(stderr, "zeroer: populated %llu KiB in 3 rounds, %llu KiB in the 9 after (cleared %llu); "
			"%llu KiB unused\n", (unsigned long long)(early >> 10), (unsigned long long)(late >> 10),
			(unsigned long long)(late_cleared >> 10), (unsigned long long)(unused >> 10));
		return 1;
	}
	printf("populated %llu KiB in 3 rounds, none after; %llu KiB unused\n", (unsigned long long)(early >> 10),
	       (unsigned long long)(unused >> 10));
	return 0;
}

/* Block i of a program that grows: 4 MiB by calloc, every page written;
 * the zeroer given a core at the first. */
static unsigned char *grown_block(int i)
{
	unsigned char *b = calloc(1, 4 * MIB);
	if (!b)
		exit(4);
	if (!i)
		give_zeroer_a_core();
	for (size_t k = 0; k < 4 * MIB; k += PAGE)
		b[k] = 1;
	return b;
}

/* The reserve: with HUGEZERO_RESERVE=16M and HUGEZERO_DIRTY_DECAY_MS=300
 * (zeroer.sh), blocks of fresh memory kept one after another are found in
 * memory, the reserve never holds more than its limit, it is gone once the
 * program has stopped allocating for the delay (counted as unused), and
 * the idle thread ends. The zeroer given a core (give_zeroer_a_core):
 * starved, it fills no reserve. */
static int reserve(void)
{
	unsigned char *b[12];
	uint64_t most = 0;
	make_room(128 * MIB);
	for (int i = 0; i < 12; i++) {
		b[i] = grown_block(i);
		usleep(40000);
		uint64_t r = stat("reserve.bytes");
		most = r > most ? r : most;
	}
	uint64_t hits = stat("reserve.hits"), populated = stat("background.populated_bytes");
	if (most > 16 * MIB || !populated || hits < 3) {
		fprintf(stderr, "zeroer: reserve at most %llu MiB (limit 16), populated %llu MiB, %llu hits\n",
			(unsigned long long)(most >> 20), (unsigned long long)(populated >> 20),
			(unsigned long long)hits);
		return 1;
	}
	uint64_t before = stat("reserve.bytes"), unused0 = stat("reserve.unused_bytes");
	usleep(1500000);
	uint64_t left = stat("reserve.bytes"), unused = stat("reserve.unused_bytes") - unused0;
	/* What the decay released of the reserve is the zeroer's work unused. */
	if (unused < before || unused > populated + stat("background.cleared_bytes")) {
		fprintf(stderr, "zeroer: %llu bytes of reserve released by the decay, %llu counted unused\n",
			(unsigned long long)before, (unsigned long long)unused);
		return 1;
	}
	usleep(1500000);
	if (left || !stat("background.exits") || stat("background.running")) {
		fprintf(stderr, "zeroer: %llu bytes of reserve after the decay; %llu exits, running %llu\n",
			(unsigned long long)left, (unsigned long long)stat("background.exits"),
			(unsigned long long)stat("background.running"));
		return 1;
	}
	printf("reserve at most %llu MiB, %llu hits\n", (unsigned long long)(most >> 20), (unsigned long long)hits);
	for (int i = 0; i < 12; i++)
		free(b[i]);
	return 0;
}

/* A program that only grows, idle between its blocks (taken fresh, as
 * in reserve()): the reserve, which would fill above every peak the
 * program reached itself, never fills, and the peak stays the program's. */
static int peak(int execd)
{
	unsigned char *b[12];
	uint64_t grown = 0;
	struct rusage u;
	/* The case's premise (peak_exec): the kernel reports the parent's
	 * peak as this process's. */
	if (execd && (getrusage(RUSAGE_SELF, &u) || (uint64_t)u.ru_maxrss << 10 < 256 * MIB)) {
		fprintf(stderr, "zeroer: ru_maxrss %ld KiB after the exec, not the parent's 256 MiB\n", u.ru_maxrss);
		return 1;
	}
	for (int i = 0; i < 12; i++) {
		b[i] = grown_block(i);
		uint64_t before = peak_rss();
		usleep(40000); /* idle: the zeroer may work */
		uint64_t after = peak_rss();
		grown = after - before > grown ? after - before : grown;
	}
	uint64_t populated = stat("background.populated_bytes"), starts = stat("background.starts");
	if (populated || grown > MIB || !starts) {
		fprintf(stderr, "zeroer: populated %llu KiB, the peak grew by %llu KiB while idle, %llu starts\n",
			(unsigned long long)(populated >> 10), (unsigned long long)(grown >> 10),
			(unsigned long long)starts);
		return 1;
	}
	for (int i = 0; i < 12; i++)
		free(b[i]);
	return 0;
}

/* peak(), exec'd from a process that touched 256 MiB first: a parent's
 * peak, which the exec'd program's getrusage reports as its own, is no
 * room for the reserve either. */
static int peak_exec(char **argv)
{
	size_t bytes = 256 * MIB;
	unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 3;
	for (size_t k = 0; k < bytes; k += PAGE)
		m[k] = 1;
	char *args[] = {argv[0], "peak", "execd", NULL};
	execv("/proc/self/exe", args);
	perror("zeroer: execv");
	return 3;
}

static uint64_t rss_now(void)
{
	unsigned long size, rss;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%lu %lu", &size, &rss) != 2)
		exit(3);
	fclose(f);
	return (uint64_t)rss * PAGE;
}

/* A freed block the program wrote only the first MiB of: the zeroer
 * clears that MiB and leaves the untouched 31 MiB out of memory (they
 * read zero already), so the footprint does not grow after the free; the
 * block taken again by calloc is zero. */
static int sparse(void)
{
	struct sysinfo si;
	if (sysinfo(&si) || si.totalswap) {
		printf("skip: swap is configured (or unknown): every freed page is cleared\n");
		return 0;
	}
	unsigned char *b = malloc(32 * MIB);
	if (!b)
		return 1;
	give_zeroer_a_core();
	memset(b, 0x77, MIB);
	free(b);
	uint64_t before = rss_now();
	for (int i = 0; i < 100 && stat("background.cleared_bytes") < MIB; i++)
		usleep(10000);
	usleep(100000); /* the zeroer may go on meanwhile */
	uint64_t after = rss_now(), cleared = stat("background.cleared_bytes");
	uint64_t out = stat("background.not_resident_bytes");
	unsigned char *c = calloc(1, 32 * MIB);
	for (size_t k = 0; c && k < 32 * MIB; k++)
		if (c[k]) {
			fprintf(stderr, "zeroer: calloc byte %zu is %d\n", k, c[k]);
			return 1;
		}
	if (!c || cleared < MIB || cleared > 4 * MIB || out < 28 * MIB || after > before + 2 * MIB) {
		fprintf(stderr, "zeroer: cleared %llu KiB, %llu KiB not resident; resident %llu KiB after the free, "
			"%llu KiB once cleared\n", (unsigned long long)(cleared >> 10), (unsigned long long)(out >> 10),
			(unsigned long long)(before >> 10), (unsigned long long)(after >> 10));
		return 1;
	}
	free(c);
	return 0;
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

static int seccomp(char **argv)
{
	if (!getenv("ZEROER_FILTERED"))
		return under_filter(SYS_sched_setscheduler, argv);
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
	if (argc >= 2 && !strcmp(argv[1], "reserve"))
		return reserve();
	if (argc >= 2 && !strcmp(argv[1], "sparse"))
		return sparse();
	if (argc >= 2 && !strcmp(argv[1], "peak"))
		return peak(argc >= 3);
	if (argc >= 2 && !strcmp(argv[1], "peak_exec"))
		return peak_exec(argv);
	if (argc >= 2 && !strcmp(argv[1], "faulting"))
		return faulting(argv);
	if (argc >= 2 && !strcmp(argv[1], "unpaid"))
		return unpaid();
	if (argc >= 2 && !strcmp(argv[1], "quiet"))
		return quiet();
	if (argc >= 2 && !strcmp(argv[1], "recycle"))
		return recycle();
	if (argc >= 2 && !strcmp(argv[1], "retake"))
		return retake();
	if (argc >= 2 && !strcmp(argv[1], "kept"))
		return kept();
	if (argc >= 2 && !strcmp(argv[1], "blind"))
		return blind(argv);
	if (argc >= 2 && !strcmp(argv[1], "seccomp"))
		return seccomp(argv);
	fprintf(stderr, "usage: zeroer stress SECONDS | fork ROUNDS | exit | small | reserve | peak | peak_exec | sparse | faulting | unpaid | quiet | recycle | kept | retake | blind | seccomp\n");
	return 2;
}
