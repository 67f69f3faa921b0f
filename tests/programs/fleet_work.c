/* A process of an A/B-tested fleet, for tests/programs/textfile.sh and
 * fleet.sh, run with libhugezero.so preloaded, HUGEZERO_AB and a periodic
 * report set:
 *   fleet_work WARM_MS WORK_MS JSON_PATH HOLD_MS
 *     touches its buffers, makes one call of each kind (memset of 64 KiB,
 *     256 KiB and 1 MiB; calloc of 4 MiB), sleeps WARM_MS (a collector
 *     sees the arms' series with a handful of calls), makes calls of every
 *     kind in turn for WORK_MS, writes its report in JSON to JSON_PATH
 *     ("%p": the pid) with hz_stats_dump, then sleeps HOLD_MS (its last
 *     figures are collected) and exits;
 *   fleet_work fork HOLD_MS
 *     forks a child that prints "threads N" (its threads right after the
 *     fork), makes the calls for HOLD_MS and exits; prints the child's pid
 *     at once, waits for it.
 * Every result is checked, whichever arm served it: exit status 1 when a
 * byte is wrong. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *(*volatile opaque_memset)(void *, int, size_t) = memset;

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20};
static unsigned char *buf;

/* One call of each kind; 0, or 1 when a byte is wrong. */
static int round_of_calls(int v)
{
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		opaque_memset(buf, v, sizes[i]);
		if (buf[0] != v || buf[sizes[i] - 1] != v)
			return 1;
	}
	unsigned char *p = calloc(1, (size_t)4 << 20);
	if (!p || p[0] || p[((size_t)4 << 20) - 1] || p[(size_t)3 << 20])
		return 1;
	p[0] = p[((size_t)4 << 20) - 1] = 1; /* dirty: the next calloc clears it */
	free(p);
	return 0;
}

static int calls_for(double ms)
{
	double end = now_ms() + ms;
	for (int v = 1; now_ms() < end; v = (v + 1) & 255)
		if (round_of_calls(v))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	/* The buffer and an arena block for calloc in memory before any call
	 * the arms time (by stores, not memset, which they would time): a
	 * first call slower than the rest by page faults would weigh in the
	 * first figures a collector sees. */
	buf = malloc((size_t)1 << 20);
	unsigned char *warm = malloc((size_t)4 << 20);
	if (!buf || !warm)
		return 2;
	for (size_t i = 0; i < ((size_t)4 << 20); i += 4096)
		((volatile unsigned char *)warm)[i] = 1;
	for (size_t i = 0; i < ((size_t)1 << 20); i += 4096)
		((volatile unsigned char *)buf)[i] = 1;
	free(warm);
	if (argc == 3 && !strcmp(argv[1], "fork")) {
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			/* Single-threaded right after fork (a child may unshare). */
			struct stat st;
			printf("threads %d\n", stat("/proc/self/task", &st) ? -1 : (int)st.st_nlink - 2);
			fflush(stdout);
			exit(calls_for(atof(argv[2])) ? 1 : 0); /* exit: its file is removed */
		}
		printf("%d\n", (int)c);
		fflush(stdout);
		int st;
		return c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) ? WEXITSTATUS(st) : 2;
	}
	if (argc != 5) {
		fprintf(stderr, "usage: fleet_work WARM_MS WORK_MS JSON_PATH HOLD_MS | fork HOLD_MS\n");
		return 2;
	}
	int (*dump)(const char *, const char *) = (int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "hz_stats_dump");
	if (!dump) {
		fprintf(stderr, "fleet_work: run it with libhugezero.so preloaded\n");
		return 2;
	}
	if (round_of_calls(0))
		return 1;
	usleep((useconds_t)(atof(argv[1]) * 1e3));
	if (calls_for(atof(argv[2])))
		return 1;
	if (dump(argv[3], "json")) {
		perror("fleet_work: hz_stats_dump");
		return 2;
	}
	usleep((useconds_t)(atof(argv[4]) * 1e3));
	return 0;
}
