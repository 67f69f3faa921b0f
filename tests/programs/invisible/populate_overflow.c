/* invisible-env: */
/* invisible-needs: */
/* A very large block is not judged too early. The library learns, per
 * size class, whether programs touch their fresh blocks, by reading a
 * block's pages in memory once the program had time to write it: 10 ms
 * plus its size at 2 GiB/s (a 20 GiB block: 10 s). That time must not
 * overflow for large sizes (size * 10^9 wraps above 17 GiB: a 20 GiB block
 * was read after 1.4 s, and learned as sparse while the program was still
 * writing it).
 *
 * malloc(20 GiB) (skipped where the kernel refuses it), its first 64 MiB
 * written, 2 s later a large allocation (each one reads the blocks that
 * are due): in the library's run no block may have been read yet
 * (populate.samples stays 0). Under glibc the block is only checked for
 * its bytes. */
#include "invisible.h"

#define BIG ((size_t)20 << 30)
#define TOUCHED ((size_t)64 << 20)

int main(void)
{
	alarm(30);
	unsigned char *p = malloc(BIG);
	if (!p) {
		if (under_hz())
			fail("malloc(20 GiB) refused under the library (glibc's was granted)");
		skip("malloc(20 GiB) refused here (overcommit)");
	}
	uint64_t s0 = under_hz() ? counter("populate.samples") : 0;
	memset(p, 0x5C, TOUCHED);
	sleep_ns(2000000000u);
	unsigned char *q = malloc((size_t)8 << 20); /* reads the blocks that are due */
	if (!q)
		fail("malloc(8 MiB)");
	memset(q, 1, (size_t)8 << 20);
	if (under_hz()) {
		uint64_t s1 = counter("populate.samples");
		if (s1 != s0)
			fail("a 20 GiB block, 64 MiB of it written, was read for its size class 2 s after its malloc "
			     "(populate.samples %llu -> %llu): it is due only after 10 s (its size at 2 GiB/s)",
			     (unsigned long long)s0, (unsigned long long)s1);
	}
	if (first_not(p, 0x5C, TOUCHED) != TOUCHED)
		fail("the block's first 64 MiB changed");
	free(q);
	free(p);
	note("a 20 GiB block with 64 MiB written: not read for its class 2 s after its malloc");
	return 0;
}
