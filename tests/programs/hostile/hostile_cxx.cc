// C++ hostile cases (hostile.sh), built with -fsized-deallocation:
//
//   newcount  new char[2 MiB] until std::bad_alloc (at most 100000), one
//             byte written in each: prints VmSize and VmData (KiB) after a
//             first small block, and the count.
//   sized     a 40 MiB new[] given back by a sized delete[] naming 100 B:
//             then 1000 malloc(100) none inside it, a 40 MiB malloc works;
//             200 times more (every page written each time) and RSS stays
//             below 400 MiB.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unistd.h>

#include "footprint.h"

static const std::size_t MIB = std::size_t(1) << 20, BIG = 40 * MIB;

static void touch(char *p, std::size_t n)
{
	for (std::size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	p[n - 1] = 1;
}

static int fail(const char *what, unsigned long long v = 0)
{
	std::fprintf(stderr, what, v);
	std::fputc('\n', stderr);
	return 1;
}

static int newcount()
{
	static char *volatile sink;
	std::size_t n = 0;
	print_footprint();
	try {
		for (; n < 100000; n++) {
			sink = new char[2 << 20];
			sink[0] = 1;
		}
	} catch (const std::bad_alloc &) {
	}
	std::printf("%zu\n", n);
	return 0;
}

static int sized()
{
	char *p = new char[BIG];
	touch(p, BIG);
	operator delete[](p, 100);
	std::uintptr_t lo = std::uintptr_t(p), hi = lo + BIG;
	static void *small[1000];
	for (int i = 0; i < 1000; i++) {
		small[i] = std::malloc(100);
		if (!small[i])
			return fail("malloc(100) returned NULL");
		std::uintptr_t a = std::uintptr_t(small[i]);
		if (a >= lo && a < hi)
			return fail("malloc(100) returned an address inside the 40 MiB block deleted "
				    "with size 100, at offset %llu",
				    (unsigned long long)(a - lo));
		static_cast<char *>(small[i])[99] = 1;
	}
	for (int i = 0; i < 1000; i++)
		std::free(small[i]);
	char *q = static_cast<char *>(std::malloc(BIG));
	if (!q)
		return fail("malloc(40 MiB) after the wrong-size delete returned NULL");
	touch(q, BIG);
	std::free(q);
	for (int i = 0; i < 200; i++) {
		char *r = new char[BIG];
		touch(r, BIG);
		operator delete[](r, 100);
	}
	unsigned long long size = 0, rss = 0;
	FILE *f = std::fopen("/proc/self/statm", "r");
	if (!f || std::fscanf(f, "%llu %llu", &size, &rss) != 2)
		return fail("cannot read /proc/self/statm");
	std::fclose(f);
	rss = rss * (unsigned long long)sysconf(_SC_PAGESIZE) / MIB;
	if (rss >= 400)
		return fail("RSS %llu MiB after 200 x 40 MiB deleted with a wrong size (leak)", rss);
	std::printf("rss %llu MiB\n", rss);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!std::strcmp(m, "newcount"))
		return newcount();
	if (!std::strcmp(m, "sized"))
		return sized();
	std::fprintf(stderr, "usage: %s newcount | sized\n", argv[0]);
	return 2;
}
