/* A program linked with libhugezero.a: its malloc, calloc and memset must
 * be the library's (its counters move with each call), and work. Built
 * twice: against glibc's shared libc, and fully static. Prints failures
 * and "N passed, N failed". */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/hugezero.h"
#include "../util/check.h"

static uint64_t stat(const char *name)
{
	uint64_t v = 0;
	CHECK(hz_stat(name, &v) == 0, "counter %s", name);
	return v;
}

/* Opaque to the compiler: calls are not folded away. */
static void *(*volatile opaque_memset)(void *, int, size_t) = memset;

int main(void)
{
	uint64_t m0 = stat("memset.large.calls"), a0 = stat("malloc.large.calls");
	uint64_t c0 = stat("calloc.large.calls"), s0 = stat("malloc.small.calls");

	size_t n = (size_t)32 << 20;
	unsigned char *p = malloc(n);
	CHECK(p != NULL, "malloc 32 MiB");
	m0 = stat("memset.large.calls");
	opaque_memset(p, 0x5A, n);
	uint64_t m1 = stat("memset.large.calls");
	CHECK(m1 == m0 + 1, "memset is the library's: %llu calls", (unsigned long long)(m1 - m0));
	CHECK(all(p, n, 0x5A), "memset wrote");
	free(p);
	unsigned char *z = calloc(1, n);
	CHECK(z && all(z, n, 0), "calloc after a dirty free reads zero");
	free(z);
	void *small[1000];
	for (int i = 0; i < 1000; i++)
		small[i] = malloc(16 + (size_t)i);
	for (int i = 0; i < 1000; i++)
		free(small[i]);

	CHECK(stat("malloc.large.calls") == a0 + 2, "malloc is the library's");
	CHECK(stat("calloc.large.calls") == c0 + 1, "calloc is the library's");
	CHECK(stat("malloc.small.calls") > s0, "small blocks from the embedded jemalloc");
	CHECK(malloc_usable_size(malloc(3 << 20)) == (3 << 20), "page-rounded large blocks");
	return report();
}
