/* Another library's fork handlers that allocate (hostile.sh, case 2): its
 * constructor registers them with pthread_atfork, their behaviour chosen
 * by ATFORK_MODE, read there:
 *
 *   a  prepare mallocs 100 B and writes it; parent and child free it.
 *   b  the same with 2 MiB.
 *   c  the child frees a 2 MiB block the constructor took, and mallocs,
 *      writes and frees small and large blocks (a calloc checked zero).
 *   d  a and b, prepare also taking the library's mutex (released in
 *      parent and child), which atfork_alloc_locked holds around its malloc.
 *
 * Linked by atfork_main (initialised before a preloaded allocator) and
 * dlopen()ed by atfork_dlopen (after it). A failed allocation aborts with a
 * message: the fork, or the child, then fails. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static int mode;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *small, *big, *before;

static void die(const char *what)
{
	static const char pre[] = "atfork_alloc: ";
	(void)!write(2, pre, sizeof pre - 1);
	(void)!write(2, what, strlen(what));
	(void)!write(2, "\n", 1);
	abort();
}

static char *take(size_t n, const char *what)
{
	char *p = malloc(n);
	if (!p)
		die(what);
	/* every page up to 2 MiB, then every MiB: children stay cheap */
	for (size_t i = 0; i < n; i += n <= 2 * MIB ? 4096 : MIB)
		p[i] = 1;
	p[n - 1] = 1;
	return p;
}

static void prepare(void)
{
	if (mode == 'd')
		pthread_mutex_lock(&mu);
	if (mode == 'a' || mode == 'd')
		small = take(100, "prepare: malloc(100) returned NULL");
	if (mode == 'b' || mode == 'd')
		big = take(2 * MIB, "prepare: malloc(2 MiB) returned NULL");
}

static void release(void)
{
	free(small);
	free(big);
	small = big = NULL;
}

static void parent(void)
{
	release();
	if (mode == 'd')
		pthread_mutex_unlock(&mu);
}

static void child(void)
{
	release();
	if (mode == 'c') {
		free(before);
		before = NULL;
		static const size_t sizes[] = {16, 100, 4096, 65536, MIB, 2 * MIB, 8 * MIB, 40 * MIB};
		for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
			free(take(sizes[i], "child: malloc returned NULL"));
		unsigned char *z = calloc(1, 2 * MIB);
		if (!z)
			die("child: calloc(2 MiB) returned NULL");
		for (size_t i = 0; i < 2 * MIB; i += 4096)
			if (z[i])
				die("child: calloc(2 MiB) not zero");
		free(z);
	}
	if (mode == 'd')
		pthread_mutex_unlock(&mu);
}

/* malloc(n) with the library's mutex held, its first and last byte written. */
void *atfork_alloc_locked(size_t n)
{
	pthread_mutex_lock(&mu);
	char *p = malloc(n);
	if (p)
		p[0] = p[n - 1] = 1;
	pthread_mutex_unlock(&mu);
	return p;
}

__attribute__((constructor)) static void init(void)
{
	const char *m = getenv("ATFORK_MODE");
	mode = m && m[0] >= 'a' && m[0] <= 'd' ? m[0] : 'a';
	if (mode == 'c')
		before = take(2 * MIB, "constructor: malloc(2 MiB) returned NULL");
	if (pthread_atfork(prepare, parent, child))
		die("pthread_atfork failed");
}
