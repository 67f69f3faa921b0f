/* Run with HUGEZERO_SMALL=next and another allocator after libhugezero.so
 * (tests/programs/small_next.sh), its soname the argument: small blocks
 * are that allocator's (its own malloc_usable_size, looked up in it,
 * knows each; the embedded jemalloc served none), large ones the arenas'; realloc across
 * the threshold both ways keeps the bytes; malloc_usable_size, aligned
 * blocks and calloc's zeros hold on both sides; dlerror's allocation (the
 * dynamic linker's own) is freed; a forked child, while threads
 * allocate, allocates and frees on both sides. Prints "ok" and exits 0,
 * or names what failed. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAIL(...) (printf(__VA_ARGS__), printf("\n"), exit(1))

static int zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static volatile int stop;

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!stop) {
		size_t n = (size_t)1 << (4 + rand_r(&seed) % 19); /* 16 B .. 4 MiB */
		unsigned char *p = rand_r(&seed) & 1 ? calloc(1, n) : malloc(n);
		if (!p)
			FAIL("churn: %zu bytes", n);
		p[n - 1] = 1;
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		FAIL("usage: small_next SONAME");
	void *peer = dlopen(argv[1], RTLD_LAZY | RTLD_NOLOAD);
	size_t (*peer_usable)(void *) = peer ? (size_t (*)(void *))dlsym(peer, "malloc_usable_size") : NULL;
	if (!peer_usable)
		FAIL("%s is not loaded, or has no malloc_usable_size", argv[1]);
	int (*stat)(const char *, uint64_t *) = (int (*)(const char *, uint64_t *))dlsym(RTLD_DEFAULT, "hz_stat");
	if (!stat)
		FAIL("libhugezero.so is not loaded");
	/* dlsym's failure and dlerror allocate inside the dynamic linker. */
	if (dlsym(RTLD_NEXT, "no_such_function_here") || !dlerror())
		FAIL("dlerror");
	void *small[1000];
	for (int i = 0; i < 1000; i++) {
		size_t n = 16 + (size_t)i * 37;
		if (!(small[i] = malloc(n)) || malloc_usable_size(small[i]) < n)
			FAIL("malloc(%zu)", n);
		memset(small[i], i & 255, n);
	}
	uint64_t je = 1, large = 0;
	if (stat("malloc.small.calls", &je) || je != 0)
		FAIL("the embedded jemalloc served %llu small blocks", (unsigned long long)je);
	for (int i = 0; i < 1000; i++) {
		if (peer_usable(small[i]) != malloc_usable_size(small[i]))
			FAIL("block %d: usable %zu, %s's own %zu", i, malloc_usable_size(small[i]), argv[1],
			     peer_usable(small[i]));
		free(small[i]);
	}
	/* Across the threshold (1 MiB) and back, the bytes kept. */
	unsigned char *p = malloc(1000);
	memset(p, 0x5A, 1000);
	p = realloc(p, (size_t)3 << 20);
	if (!p || malloc_usable_size(p) < ((size_t)3 << 20))
		FAIL("realloc up");
	for (int i = 0; i < 1000; i++)
		if (p[i] != 0x5A)
			FAIL("realloc up: byte %d", i);
	p = realloc(p, 500);
	if (!p || malloc_usable_size(p) < 500 || p[0] != 0x5A || p[499] != 0x5A)
		FAIL("realloc down");
	free(p);
	if (stat("malloc.large.calls", &large) || large < 1)
		FAIL("no large block reached the arenas");
	/* Aligned and zeroed, both sides. */
	size_t sizes[] = {24, 3000, 100000, (size_t)3 << 20};
	for (int i = 0; i < 4; i++) {
		void *a = NULL;
		if (posix_memalign(&a, 4096, sizes[i]) || (uintptr_t)a % 4096)
			FAIL("posix_memalign(4096, %zu)", sizes[i]);
		free(a);
		unsigned char *z = malloc(sizes[i]);
		memset(z, 0xFF, sizes[i]);
		free(z);
		z = calloc(1, sizes[i]);
		if (!z || !zero(z, sizes[i]))
			FAIL("calloc(%zu)", sizes[i]);
		free(z);
	}
	/* fork while threads allocate. */
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 3));
	for (int round = 0; round < 20; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (size_t n = 16; n <= ((size_t)8 << 20); n *= 8) {
				unsigned char *c = calloc(1, n);
				if (!c || !zero(c, n))
					_exit(1);
				free(c);
			}
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			FAIL("fork round %d", round);
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("ok\n");
	return 0;
}
