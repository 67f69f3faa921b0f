/* The real-program suite's large-block case (scripts/hzcli/real.py), as
 * C++ writes it: a table of 20 slots; each step picks a slot at random,
 * deletes the block it holds and puts a new char[n]() there, n uniform from
 * 5 to 25 MiB. The value-initialisation `()` is the only write: operator
 * new[] and a clear of the whole block, which no compiler can merge into a
 * calloc. A few bytes of every new block are read and must be zero, so the
 * block cannot be elided.
 *
 *   large_blocks [STEPS]     default 2000; fixed seed, so every allocator
 *                            gets the same sizes
 *
 * Output, one "key value" line each:
 *   malloc_from OBJECT       the object whose malloc this program calls
 *   seconds S                the steps' wall time
 *   bytes N                  the sum of the sizes allocated (the suite
 *                            computes it again from the seed)
 *   peak_rss_kib N
 * Exit status 1 and a message if a block is not zero. */
#include <dlfcn.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <memory>

#include "bench.h"

namespace {

constexpr int kSlots = 20;
constexpr uint64_t kMin = 5u << 20, kMax = 25u << 20;

/* The bytes of p that are read, ORed: first, last and 14 spread between.
 * The barrier makes the block escape, so that neither the clear nor the
 * allocation can be proven unused. */
unsigned char probe(const char *p, uint64_t n)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	unsigned char any = 0;
	for (uint64_t k = 0; k < 16; k++)
		any |= static_cast<unsigned char>(p[k * (n - 1) / 15]);
	return any;
}

}  // namespace

int main(int argc, char **argv)
{
	long steps = argc > 1 ? atol(argv[1]) : 2000;
	if (steps < 1) {
		fprintf(stderr, "usage: large_blocks [STEPS]\n");
		return 2;
	}
	Dl_info di;
	printf("malloc_from %s\n", dladdr(reinterpret_cast<void *>(malloc), &di) && di.dli_fname ? di.dli_fname : "?");
	std::unique_ptr<char[]> slot[kSlots];
	uint64_t rng = 0x853C49E6748FEA9Bull, bytes = 0;
	double t0 = now_ns();
	for (long i = 0; i < steps; i++) {
		uint64_t r = xorshift(&rng);
		int k = static_cast<int>(r % kSlots);
		uint64_t n = kMin + (r >> 32) % (kMax - kMin + 1);
		slot[k].reset();
		slot[k].reset(new char[n]());
		if (probe(slot[k].get(), n))
			die("new char[n]() returned a block that is not zero");
		bytes += n;
	}
	double t = (now_ns() - t0) / 1e9;
	printf("seconds %.4f\nbytes %llu\npeak_rss_kib %ld\n", t, static_cast<unsigned long long>(bytes),
	       peak_rss_kib());
	return 0;
}
