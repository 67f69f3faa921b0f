// C++'s operators under the library: every form of new and delete, sized
// and aligned, small and large; a failed new throws std::bad_alloc after
// calling the new_handler, and its nothrow form returns nullptr. Prints
// the object that defines operator new for this program, then one line
// per failed check, then "N passed, M failed"; exit status 1 if any
// failed. Built with -fsized-deallocation, so delete passes sizes.
#include <dlfcn.h>
#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

static int passed, failed;

static void check(bool ok, const char *what, size_t n = 0)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		std::printf("FAIL %s (%zu)\n", what, n);
	}
}

// Writes the block whole and checks it back: a block shorter than asked,
// or shared with another, shows here.
static void use(unsigned char *p, size_t n, unsigned char v, const char *what)
{
	std::memset(p, v, n);
	bool ok = malloc_usable_size(p) >= n;
	for (size_t i = 0; i < n; i += 4093)
		ok = ok && p[i] == v;
	check(ok && (n == 0 || p[n - 1] == v), what, n);
}

struct alignas(64) Line {
	unsigned char b[64];
};
struct alignas(4096) Page {
	unsigned char b[4096];
};
struct alignas(1 << 21) Huge {
	unsigned char b[1 << 21];
};

static int handler_calls;
static void handler()
{
	if (++handler_calls == 3)
		std::set_new_handler(nullptr); // then new throws
}

int main()
{
	Dl_info di;
	void *newp = dlsym(RTLD_DEFAULT, "_Znwm");
	std::printf("operator new from %s\n", newp && dladdr(newp, &di) ? di.dli_fname : "?");

	// Sizes from 0 to 32 MiB, across jemalloc's classes and the arenas',
	// freed by plain, sized and array delete.
	static const size_t sizes[] = {0,     1,        8,         24,        100,      4096,
				       16384, 40000,    (1 << 20) - 1, 1 << 20, 3 << 20, 32 << 20};
	for (size_t n : sizes) {
		unsigned char *a = new unsigned char[n];
		unsigned char *b = static_cast<unsigned char *>(::operator new(n));
		check(a != nullptr && b != nullptr && a != b, "new gives distinct blocks", n);
		use(a, n, 0x5a, "new[]");
		use(b, n, 0xa5, "new");
		delete[] a;
		::operator delete(b, n); // sized
		unsigned char *c = static_cast<unsigned char *>(::operator new(n, std::nothrow));
		use(c, n, 1, "new(nothrow)");
		::operator delete(c, std::nothrow);
		unsigned char *d = static_cast<unsigned char *>(::operator new[](n));
		use(d, n, 2, "operator new[]");
		::operator delete[](d, n);
	}

	// Many live small objects of mixed sizes, freed by size in another order.
	std::vector<std::pair<unsigned char *, size_t>> live;
	for (size_t i = 0; i < 20000; i++) {
		size_t n = 1 + (i * 2654435761u) % 3000;
		live.emplace_back(static_cast<unsigned char *>(::operator new(n)), n);
		std::memset(live.back().first, (int)(i & 0xff), n);
	}
	bool intact = true;
	for (size_t i = 0; i < live.size(); i++)
		intact = intact && live[i].first[live[i].second - 1] == (unsigned char)(i & 0xff);
	check(intact, "live small objects kept their bytes", live.size());
	for (size_t i = live.size(); i-- > 0;)
		::operator delete(live[i].first, live[i].second);

	// Aligned forms: over-aligned types, explicit alignments, nothrow.
	Line *l = new Line[10];
	Page *pg = new Page;
	Huge *h = new Huge;
	check((uintptr_t)l % 64 == 0, "new Line[] aligned to 64");
	check((uintptr_t)pg % 4096 == 0, "new Page aligned to 4096");
	check((uintptr_t)h % (1 << 21) == 0, "new Huge aligned to 2 MiB");
	use(l[0].b, sizeof(Line) * 10, 3, "aligned new[]");
	use(pg->b, sizeof(Page), 4, "aligned new");
	use(h->b, sizeof(Huge), 5, "aligned new of 2 MiB");
	delete[] l;
	delete pg;
	delete h;
	for (size_t a = 16; a <= (1 << 22); a <<= 3) {
		for (size_t n : {size_t(1), size_t(5000), size_t(3) << 20}) {
			void *p = ::operator new(n, std::align_val_t(a), std::nothrow);
			check(p && (uintptr_t)p % a == 0, "aligned new(nothrow)", a);
			use(static_cast<unsigned char *>(p), n, 6, "aligned new(nothrow) block");
			::operator delete(p, std::align_val_t(a), std::nothrow);
			p = ::operator new[](n, std::align_val_t(a));
			check((uintptr_t)p % a == 0, "aligned new[]", a);
			::operator delete[](p, n, std::align_val_t(a)); // sized and aligned
		}
	}
	::operator delete(nullptr, size_t(8));
	::operator delete[](nullptr, size_t(8), std::align_val_t(64));

	// Failure: bad_alloc after the handler, nullptr from nothrow.
	const size_t too_big = SIZE_MAX / 4;
	std::set_new_handler(handler);
	bool threw = false;
	try {
		unsigned char *p = new unsigned char[too_big];
		p[0] = 1;
		delete[] p;
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	check(threw && handler_calls == 3, "failed new calls the new_handler, then throws bad_alloc",
	      (size_t)handler_calls);
	check(::operator new(too_big, std::nothrow) == nullptr, "failed new(nothrow) returns nullptr");
	check(::operator new(too_big, std::align_val_t(64), std::nothrow) == nullptr,
	      "failed aligned new(nothrow) returns nullptr");
	threw = false;
	try {
		void *p = ::operator new[](too_big, std::align_val_t(4096));
		::operator delete[](p, std::align_val_t(4096));
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	check(threw, "failed aligned new throws bad_alloc");

	std::printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
