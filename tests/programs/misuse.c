/* Heap-misuse probes: one misuse each, at a small size (64 B) or a large
 * one (4 MiB), then the program goes on as programs do (allocations and
 * frees of the sizes it used, a calloc checked zero). Exit 0 means the
 * allocator let it pass; an allocator that catches it ends the program
 * (glibc's way: abort with a message; or a fault). misuse.sh runs every
 * probe under glibc, the peers and hugezero side by side.
 * Usage: misuse PROBE SIZE, PROBE one of the names below, SIZE small|large */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LARGE ((size_t)4 << 20)

static void *volatile sink; /* the compiler sees neither the frees nor the writes as dead */

static char *get(size_t n)
{
	char *p = malloc(n);
	if (!p) {
		fprintf(stderr, "malloc(%zu) failed\n", n);
		exit(2);
	}
	memset(p, 0x11, n);
	sink = p;
	return p;
}

/* What the program does after: frees and allocations of n bytes, enough
 * to pass any quarantine or cache, and calloc checked zero. */
static void go_on(size_t n)
{
	enum { K = 64 };
	for (int round = 0; round < (n >= LARGE ? 8 : 200); round++) {
		char *b[K];
		int k = n >= LARGE ? 4 : K;
		for (int i = 0; i < k; i++)
			b[i] = get(n);
		for (int i = 0; i < k; i++)
			free(b[i]);
	}
	unsigned char *c = calloc(1, n);
	if (!c)
		exit(2);
	for (size_t i = 0; i < n; i++)
		if (c[i]) {
			fprintf(stderr, "calloc(%zu): byte %zu is %u\n", n, i, c[i]);
			exit(3); /* a wrong answer, not a catch */
		}
	free(c);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *probe = argv[1];
	size_t n = !strcmp(argv[2], "large") ? LARGE : 64;
	char *p = get(n), *q = get(n);
	if (!strcmp(probe, "double_free")) {
		free(p);
		free(p);
	} else if (!strcmp(probe, "interior_free")) {
		free(p + (n >= LARGE ? 4096 : 16));
	} else if (!strcmp(probe, "invalid_free")) {
		char local[64];
		sink = local;
		free(local + (n >= LARGE ? 0 : 16));
	} else if (!strcmp(probe, "overflow")) {
		/* 64 bytes past the end, into whatever follows */
		memset(p + n, 0x41, 64);
		free(q);
		free(p);
	} else if (!strcmp(probe, "write_after_free")) {
		free(p);
		memset(p, 0x41, 32);
	} else if (!strcmp(probe, "realloc_freed")) {
		free(p);
		sink = realloc(p, 2 * n);
	} else {
		fprintf(stderr, "unknown probe %s\n", probe);
		return 2;
	}
	go_on(n);
	return 0;
}
