/* Forks under load: THREADS workers run tests/programs/faults/shadow.h's
 * shadow-checked workload (malloc, calloc, posix_memalign, realloc, free,
 * memset, malloc_trim; 1 B to 64 MiB; every calloc byte checked zero,
 * every block checked unchanged before it is freed or resized), while
 * short-lived threads come and go with their thread caches, and the main
 * thread makes FORKS children in turn by fork, fork+exec, vfork+exec and
 * posix_spawn, a few shadow-checked operations of its own between them.
 * Before every 16th fork a freed 48 MiB block gives the allocator's
 * background work a clear to be in the middle of. A forked child checks
 * some of the main thread's blocks and callocs its own (shadow.h's
 * sh_child); an exec'd child callocs blocks of 24 B to 6 MiB and checks
 * them zero. Every
 * child is waited for with a deadline (a hang fails). With a LIBRARY
 * argument, that library is dlopen'ed once the workers run (one that
 * registers allocating pthread_atfork handlers).
 * Prints "forks N errors E hung H failed F ops O" and exits 0 when all
 * FORKS ran and E, H and F are 0; every 10,000 forks the same figures so
 * far go to stderr. SIGINT or SIGTERM stops the forks early, and the line
 * is printed for those made.
 * Usage: forkload FORKS THREADS [LIBRARY] | forkload child */
#include <dlfcn.h>
#include <spawn.h>

#include "faults/shadow.h"

extern char **environ;

static char self[4096];
static struct sh_config work = {.name = "forkload", .seconds = 1e9, .slots = 48, .trim_every = 20000};
static void *workers(void *arg)
{
	struct sh_totals totals;
	(void)arg;
	sh_run(&work, &totals);
	return NULL;
}

/* A thread that takes blocks into its thread cache and exits with them. */
static void *brief(void *arg)
{
	uint64_t s = (uintptr_t)arg | 1;
	void *p[32];
	for (int i = 0; i < 32; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		p[i] = malloc(16 + s % 512);
	}
	for (int i = 0; i < 32; i += 2)
		free(p[i]);
	for (int i = 1; i < 32; i += 2)
		free(p[i]);
	return NULL;
}

static void *comings(void *arg)
{
	(void)arg;
	for (uintptr_t k = 1; !__atomic_load_n(&sh_stop, __ATOMIC_RELAXED); k++) {
		pthread_t t;
		if (!pthread_create(&t, NULL, brief, (void *)k))
			pthread_join(t, NULL);
		nanosleep(&(struct timespec){0, 2000000}, NULL);
	}
	return NULL;
}

static volatile sig_atomic_t stopping;
static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/* Waits for pid up to 30 s: 0 when it exited 0, 1 otherwise, 2 hung;
 * 3 when the soak was stopped meanwhile (the child killed, not counted). */
static int reap(pid_t pid)
{
	for (int i = 0; i < 30000; i++) {
		int st;
		if (stopping) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return 3;
		}
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
		if (r < 0 && errno != EINTR)
			return 1;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child")) { /* exec'd: a few callocs, checked zero */
		static const size_t sizes[] = {24, 700, 5000, 300 << 10, 2 << 20, 6 << 20};
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			unsigned char *p = calloc(1, sizes[i]);
			if (!p || sh_first_nonzero(p, sizes[i]) != sizes[i])
				return 1;
			memset(p, 0x5A, sizes[i]);
			free(p);
		}
		return 0;
	}
	if (argc < 3)
		return 2;
	static long forks; /* static: vfork below */
	forks = atol(argv[1]);
	work.threads = atoi(argv[2]);
	work.seed = (uint64_t)time(NULL);
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0)
		return 2;
	self[len] = 0;
	/* The stop is the main thread's: the other threads block it. */
	sigset_t stops;
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	pthread_sigmask(SIG_BLOCK, &stops, NULL);
	pthread_t w, c;
	pthread_create(&w, NULL, workers, NULL);
	pthread_create(&c, NULL, comings, NULL);
	if (argc > 3 && !dlopen(argv[3], RTLD_NOW)) {
		sh_say("dlopen %s: %s", argv[3], dlerror());
		return 2;
	}
	pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
	static struct sh_config mine_cfg = {.name = "forkload main", .slots = 8};
	static struct sh_thread mine = {.id = 99, .rng = 12345, .cfg = &mine_cfg};
	long failed = 0, hung = 0, f = 0;
	char *cargv[] = {self, "child", NULL};
	for (; f < forks && !stopping && !__atomic_load_n(&sh_stop, __ATOMIC_RELAXED); f++) {
		if (f && f % 10000 == 0)
			fprintf(stderr, "forkload: at %ld forks: errors %lu hung %ld failed %ld\n", f,
				__atomic_load_n(&sh_tot.errors, __ATOMIC_RELAXED), hung, failed);
		if (f % 8 == 0 && sh_op(&mine))
			break;
		if (f % 16 == 0) { /* a large free just before: a clear in progress */
			void *big = malloc(48 * SH_MIB);
			if (big)
				memset(big, 1, 48 * SH_MIB);
			free(big);
		}
		pid_t pid = -1;
		switch (f % 4) {
		case 0:
			pid = fork();
			if (pid == 0) {
				signal(SIGINT, SIG_DFL);
				signal(SIGTERM, SIG_DFL);
				sh_child(&mine);
			}
			break;
		case 1:
			pid = fork();
			if (pid == 0) {
				execve(self, cargv, environ);
				_exit(127);
			}
			break;
		case 2:
			pid = vfork();
			if (pid == 0) {
				execve(self, cargv, environ);
				_exit(127);
			}
			break;
		default:
			if (posix_spawn(&pid, self, NULL, NULL, cargv, environ))
				pid = -1;
			break;
		}
		if (pid < 0) {
			failed++;
			continue;
		}
		int r = reap(pid);
		if (r == 3)
			break;
		if (r)
			sh_say("forkload: child %ld (%s) %s", f, (const char *[]){"fork", "fork+exec", "vfork+exec",
									      "posix_spawn"}[f % 4],
			       r == 2 ? "hung" : "failed");
		failed += r == 1;
		hung += r == 2;
	}
	__atomic_store_n(&sh_stop, 1, __ATOMIC_RELAXED);
	pthread_join(w, NULL);
	pthread_join(c, NULL);
	for (int k = 0; k < mine_cfg.slots; k++)
		if (mine.b[k].p && sh_free(&mine, &mine.b[k]))
			break;
	unsigned long errors = __atomic_load_n(&sh_tot.errors, __ATOMIC_RELAXED);
	printf("forks %ld errors %lu hung %ld failed %ld ops %lu\n", f, errors, hung, failed,
	       __atomic_load_n(&sh_tot.ops, __ATOMIC_RELAXED));
	return errors || hung || failed || f < forks;
}
