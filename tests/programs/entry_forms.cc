// Every allocating form of the exported ABI, one per run (its name the
// argument), for tests/programs/entry_forms.sh: N blocks of 3 MiB, each
// checked for its alignment, its usable size and, where the form zeroes,
// its zeros (after dirty frees), from a function named form_<name>. The
// script reads the report: each form in its size class, its call site
// sampled under that name, a zeroing form in the A/B arms, every block
// served by the hugepage arenas. Built with -rdynamic and without
// sibling calls (call sites need the names and the frames).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>

extern "C" {
void *mallocx(size_t size, int flags) __attribute__((weak));
void *rallocx(void *p, size_t size, int flags) __attribute__((weak));
void dallocx(void *p, int flags) __attribute__((weak));
}
#define ZERO 0x40
#define LG_ALIGN(la) (la)

static const size_t SIZE = (size_t)3 << 20;
static const int N = 8;
static void *(*volatile opaque_memset)(void *, int, size_t) = memset;

static int fails;
static void check(void *p, size_t align, bool zeroed, const char *form)
{
	if (!p) {
		std::printf("%s: NULL\n", form);
		fails++;
		return;
	}
	if ((uintptr_t)p % align || malloc_usable_size(p) < SIZE) {
		std::printf("%s: %p align %zu usable %zu\n", form, p, align, malloc_usable_size(p));
		fails++;
	}
	if (zeroed)
		for (size_t i = 0; i < SIZE; i += 4096 - 7)
			if (((unsigned char *)p)[i]) {
				std::printf("%s: byte %zu is not zero\n", form, i);
				fails++;
				break;
			}
	opaque_memset(p, 0xA5, SIZE); // dirty, so that the next block is recycled
}

// A large block at an address that is not 2 MiB-aligned (the arenas'
// first-fit runs follow each other).
static void *unaligned_large(void)
{
	void *a = mallocx(SIZE / 2, 0), *b = mallocx(SIZE / 2, 0);
	void *keep = (uintptr_t)a % (1 << 21) ? a : b;
	dallocx(keep == a ? b : a, 0);
	return keep;
}

#define FORM(name, align, zeroed, alloc, release)                     \
	extern "C" __attribute__((noinline)) void form_##name(void)    \
	{                                                              \
		void *p = alloc;                                       \
		check(p, align, zeroed, #name);                        \
		release;                                               \
	}

FORM(malloc, 16, false, malloc(SIZE), free(p))
FORM(calloc, 16, true, calloc(1, SIZE), free(p))
FORM(realloc, 16, false, realloc(malloc(64), SIZE), free(p))
FORM(posix_memalign, 1 << 21, false, (posix_memalign(&p, 1 << 21, SIZE) ? NULL : p), free(p))
FORM(aligned_alloc, 1 << 16, false, aligned_alloc(1 << 16, SIZE), free(p))
FORM(memalign, 1 << 21, false, memalign(1 << 21, SIZE), free(p))
FORM(valloc, 4096, false, valloc(SIZE), free(p))
FORM(pvalloc, 4096, false, pvalloc(SIZE), free(p))
FORM(mallocx, 16, false, mallocx(SIZE, 0), dallocx(p, 0))
FORM(mallocx_zero, 16, true, mallocx(SIZE, ZERO), dallocx(p, 0))
FORM(mallocx_zero_aligned, 1 << 21, true, mallocx(SIZE, ZERO | LG_ALIGN(21)), dallocx(p, 0))
FORM(rallocx_zero, 16, true, rallocx(mallocx(64, ZERO), SIZE, ZERO), dallocx(p, 0))
// An arena block resized to an alignment it lacks: moved onto it.
FORM(rallocx_aligned, 1 << 21, false, rallocx(unaligned_large(), SIZE, LG_ALIGN(21)), dallocx(p, 0))
FORM(new, 16, false, operator new(SIZE), operator delete(p))
FORM(new_array, 16, false, operator new[](SIZE), operator delete[](p, SIZE))
FORM(new_nothrow, 16, false, operator new(SIZE, std::nothrow), operator delete(p))
FORM(new_aligned, 1 << 21, false, operator new(SIZE, std::align_val_t(1 << 21)),
     operator delete(p, std::align_val_t(1 << 21)))

static const struct {
	const char *name;
	void (*fn)(void);
} forms[] = {
#define F(n) {#n, form_##n}
	F(malloc), F(calloc), F(realloc), F(posix_memalign), F(aligned_alloc), F(memalign),
	F(valloc), F(pvalloc), F(mallocx), F(mallocx_zero), F(mallocx_zero_aligned),
	F(rallocx_zero), F(rallocx_aligned), F(new), F(new_array), F(new_nothrow), F(new_aligned),
};

int main(int argc, char **argv)
{
	for (const auto &f : forms) {
		if (argc > 1 && std::strcmp(argv[1], f.name))
			continue;
		if (argc < 2) { // the list, for the script
			std::printf("%s\n", f.name);
			continue;
		}
		for (int i = 0; i < N; i++)
			f.fn();
		return fails != 0;
	}
	return argc < 2 ? 0 : 2;
}
