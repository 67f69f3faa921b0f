/* The arenas' release as a program sees it (tests/programs/release.sh).
 *
 * release purge N: N blocks of 2 MiB taken and written, then all freed and
 *   malloc_trim(0) called, between two getppid() calls that mark the span
 *   for strace; then the same N blocks taken again by calloc, each checked
 *   zero. Prints the resident kB after the trim.
 * release threads T N: T threads each take and write N blocks of 2 MiB,
 *   wait for each other, and free them (no trim). Prints the resident kB
 *   once all have freed, and the resident kB before any block was taken.
 * release generations G: G generations of 4 threads, one after the
 *   other, each thread taking, writing and freeing 400 blocks of 64 KiB,
 *   100 live at once, the generations between two getppid() calls; then
 *   malloc_trim(0). Prints the page faults of the first generation and
 *   of all the others together, and the resident kB before the first
 *   generation and after the trim. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BLOCK ((size_t)2 << 20)

static long resident_kb(void)
{
	long size, rss;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld", &size, &rss) != 2)
		exit(3);
	fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void **take(size_t n, int zero)
{
	void **p = malloc(n * sizeof *p);
	if (!p)
		exit(4);
	for (size_t i = 0; i < n; i++) {
		p[i] = zero ? calloc(1, BLOCK) : malloc(BLOCK);
		if (!p[i]) {
			fprintf(stderr, "block %zu: out of memory\n", i);
			exit(4);
		}
		if (zero) {
			const unsigned char *b = p[i];
			for (size_t k = 0; k < BLOCK; k++)
				if (b[k]) {
					fprintf(stderr, "calloc'd block %zu: byte %zu is %d\n", i, k, b[k]);
					exit(5);
				}
		}
		memset(p[i], 0x5a, BLOCK);
	}
	return p;
}

static void give(void **p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i]);
	free(p);
}

static size_t per_thread;
static pthread_barrier_t all_taken;

static void *worker(void *arg)
{
	(void)arg;
	void **p = take(per_thread, 0);
	pthread_barrier_wait(&all_taken);
	give(p, per_thread);
	return NULL;
}

#define GEN_BLOCK ((size_t)64 << 10)

static void *generation_main(void *arg)
{
	unsigned char *live[100] = {0};
	(void)arg;
	for (int i = 0; i < 400; i++) {
		free(live[i % 100]);
		live[i % 100] = malloc(GEN_BLOCK);
		if (!live[i % 100])
			exit(4);
		memset(live[i % 100], i, GEN_BLOCK);
	}
	for (int i = 0; i < 100; i++)
		free(live[i]);
	return NULL;
}

static long minor_faults(void)
{
	struct rusage u;
	if (getrusage(RUSAGE_SELF, &u))
		exit(3);
	return u.ru_minflt;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "generations")) {
		int g = atoi(argv[2]);
		long base = resident_kb(), first = 0, start = minor_faults();
		syscall(SYS_getppid);
		for (int k = 0; k < g; k++) {
			pthread_t th[4];
			for (int i = 0; i < 4; i++)
				if (pthread_create(&th[i], NULL, generation_main, NULL))
					return 2;
			for (int i = 0; i < 4; i++)
				pthread_join(th[i], NULL);
			if (!k)
				first = minor_faults() - start;
		}
		long later = minor_faults() - start - first;
		syscall(SYS_getppid);
		malloc_trim(0);
		printf("%ld %ld %ld %ld\n", first, later, base, resident_kb());
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "purge")) {
		size_t n = strtoul(argv[2], NULL, 10);
		void **p = take(n, 0);
		syscall(SYS_getppid); /* the span strace counts begins */
		give(p, n);
		malloc_trim(0);
		syscall(SYS_getppid); /* and ends */
		printf("%ld\n", resident_kb());
		give(take(n, 1), n);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "threads")) {
		unsigned t = (unsigned)strtoul(argv[2], NULL, 10);
		per_thread = strtoul(argv[3], NULL, 10);
		long before = resident_kb();
		pthread_t th[64];
		if (t < 1 || t > 64 || pthread_barrier_init(&all_taken, NULL, t))
			return 2;
		for (unsigned i = 0; i < t; i++)
			if (pthread_create(&th[i], NULL, worker, NULL))
				return 2;
		for (unsigned i = 0; i < t; i++)
			pthread_join(th[i], NULL);
		printf("%ld %ld\n", resident_kb(), before);
		return 0;
	}
	fprintf(stderr, "usage: release purge N | release threads T N | release generations G\n");
	return 2;
}
