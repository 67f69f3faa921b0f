/* Forks under another library's allocating fork handlers (atfork_alloc.c;
 * hostile.sh, case 2). Built twice: atfork_main links the library (its
 * constructor runs before a preloaded allocator's), atfork_dlopen
 * (-DATFORK_DLOPEN) dlopen()s the path given as its argument (after).
 * ATFORK_MODE a-c: 20 forks; d: 50 forks while three threads malloc and
 * free 16 B-4 MiB with the library's mutex held around each malloc. Every
 * child mallocs, writes and frees a few blocks and exits 0; each must. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static void *(*locked)(size_t);
static atomic_int stop;

#ifndef ATFORK_DLOPEN
void *atfork_alloc_locked(size_t n);
#endif

static void *churn(void *arg)
{
	uint64_t x = 0x2545F4914F6CDD1Du * (uintptr_t)arg + 1;
	while (!atomic_load(&stop)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* log-uniform 16 B .. 4 MiB */
		size_t n = ((size_t)16 << (x % 18)) + (x >> 40) % ((size_t)16 << (x % 18));
		if (n > 4 * MIB)
			n = 4 * MIB;
		char *p = locked(n);
		if (!p) {
			fprintf(stderr, "thread: malloc(%zu) returned NULL\n", n);
			exit(1);
		}
		free(p);
	}
	return NULL;
}

static int child_work(void)
{
	static const size_t sizes[] = {24, 1000, 100000, MIB, 4 * MIB, 40 * MIB};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		char *p = malloc(sizes[i]);
		if (!p)
			return 1;
		for (size_t j = 0; j < sizes[i]; j += sizes[i] <= 2 * MIB ? 4096 : MIB)
			p[j] = 1;
		p[sizes[i] - 1] = 1;
		free(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
#ifdef ATFORK_DLOPEN
	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBATFORK_ALLOC\n", argv[0]);
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	locked = (void *(*)(size_t))dlsym(h, "atfork_alloc_locked");
	if (!locked) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
#else
	(void)argc;
	(void)argv;
	locked = atfork_alloc_locked;
#endif
	const char *m = getenv("ATFORK_MODE");
	int d = m && m[0] == 'd';
	int forks = d ? 50 : 20;
	pthread_t t[3];
	for (int i = 0; d && i < 3; i++)
		if (pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1))) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "fork %d failed\n", i);
			return 1;
		}
		if (pid == 0)
			_exit(child_work());
		int st;
		if (waitpid(pid, &st, 0) != pid) {
			fprintf(stderr, "waitpid failed\n");
			return 1;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "fork %d: the child ended with %s %d\n", i,
				WIFSIGNALED(st) ? "signal" : "status",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			return 1;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; d && i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
