/* A workload with known counts, run with libhugezero.so preloaded and
 * HUGEZERO_STATS set; tests/stats.sh checks the reports it leaves:
 *   main thread: 7 malloc(3 MiB), 5 calloc(1, 40000), 9 memset of
 *                100000 bytes, 4 realloc to 1.5 MiB;
 *   3 threads, joined before exit: 1 malloc(5 MiB) each;
 *   a forked child: 2 malloc(3 MiB), then exit (its own report);
 * and with "dump PATH" a report written on demand by hz_stats_dump, in
 * JSON, before the child is forked. Sizes are picked in size classes the
 * C library's own allocations do not reach. With "ab": 2000 memsets of
 * 100000 bytes and 200 callocs of 2 MiB after dirty frees, every result
 * checked (whichever arm served it). With "usable": malloc_usable_size of
 * a 3 MiB block, which tells glibc's allocator from hugezero's. With
 * "badformat PATH": what hz_stats_dump answers to an unknown format. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *(*volatile opaque_memset)(void *, int, size_t) = memset;
static void *(*volatile opaque_malloc)(size_t) = malloc;

static void *thread_main(void *arg)
{
	(void)arg;
	void *p = opaque_malloc((size_t)5 << 20);
	free(p);
	return NULL;
}

static int ab_workload(void)
{
	unsigned char *buf = opaque_malloc(100000);
	for (int i = 0; i < 2000; i++) {
		opaque_memset(buf, i & 255, 100000);
		if (buf[0] != (i & 255) || buf[99999] != (i & 255) || buf[50000] != (i & 255))
			return 1;
	}
	free(buf);
	for (int i = 0; i < 200; i++) {
		unsigned char *p = calloc(1, (size_t)2 << 20);
		for (size_t k = 0; k < ((size_t)2 << 20); k += 4093)
			if (p[k])
				return 1;
		opaque_memset(p, 0xFF, 4096); /* small: not in the arms */
		p[((size_t)2 << 20) - 1] = 1;
		free(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "ab"))
		return ab_workload();
	if (argc == 3 && !strcmp(argv[1], "badformat")) { /* an unknown format is refused */
		int (*dump)(const char *, const char *) =
			(int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "hz_stats_dump");
		errno = 0;
		int rc = dump ? dump(argv[2], "xml") : 0;
		printf("%d %s\n", rc, errno == EINVAL ? "EINVAL" : "other");
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "usable")) { /* whose allocator answers */
		void *p = opaque_malloc((size_t)3 << 20);
		printf("%zu\n", malloc_usable_size(p));
		free(p);
		return 0;
	}
	void *keep[7];
	for (int i = 0; i < 7; i++)
		keep[i] = opaque_malloc((size_t)3 << 20);
	for (int i = 0; i < 7; i++)
		free(keep[i]);
	for (int i = 0; i < 5; i++)
		free(calloc(1, 40000));
	char *buf = opaque_malloc(100000);
	for (int i = 0; i < 9; i++)
		opaque_memset(buf, i, 100000);
	free(buf);
	for (int i = 0; i < 4; i++)
		free(realloc(opaque_malloc(16), (size_t)3 << 19));
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, thread_main, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);

	if (argc == 3 && !strcmp(argv[1], "dump")) {
		int (*dump)(const char *, const char *) =
			(int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "hz_stats_dump");
		if (!dump || dump(argv[2], "json")) {
			fprintf(stderr, "stats_known: hz_stats_dump failed\n");
			return 1;
		}
	}
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 2; i++)
			free(opaque_malloc((size_t)3 << 20));
		exit(0);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "stats_known: the child failed\n");
		return 1;
	}
	printf("%d %d\n", (int)getpid(), (int)pid);
	return 0;
}
