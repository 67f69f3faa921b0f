/* HUGEZERO_MODE=off (off.c): glibc's functions for the calls glibc's
 * allocator has no core entry point for. */
#include <malloc.h>
#include <string.h>

#include "../allocator/allocator.h"
#include "../arch/arch.h"
#include "preload.h"

/* glibc's own function of that name, looked up once. */
#define GLIBC(type, name) ((type)hz_glibc_lookup(&glibc_##name, #name))
static void *glibc_malloc_usable_size, *glibc_malloc_trim, *glibc_mallinfo2,
	*glibc_malloc_stats, *glibc_mallopt;

size_t hz_off_malloc_usable_size(void *p)
{
	size_t (*fn)(void *) = GLIBC(size_t (*)(void *), malloc_usable_size);
	return fn ? fn(p) : 0;
}

int hz_off_malloc_trim(size_t pad)
{
	return GLIBC(int (*)(size_t), malloc_trim)(pad);
}

struct mallinfo2 hz_off_mallinfo2(void)
{
	return GLIBC(struct mallinfo2 (*)(void), mallinfo2)();
}

void hz_off_malloc_stats(void)
{
	GLIBC(void (*)(void), malloc_stats)();
}

int hz_off_mallopt(int param, int value)
{
	return GLIBC(int (*)(int, int), mallopt)(param, value);
}

void *hz_off_mallocx(size_t size, int flags)
{
	size_t align = HZ_JE_ALIGN_OF(flags);
	if (align <= 16 && (flags & HZ_JE_ZERO)) /* glibc's calloc knows fresh memory */
		return hz_glibc_calloc(1, size);
	void *p = align > 16 ? hz_glibc_memalign(align, size) : hz_glibc_malloc(size);
	if (p && (flags & HZ_JE_ZERO))
		hz_memset_impl(p, 0, size); /* glibc's once the constructor diverted it */
	return p;
}

void *hz_off_rallocx(void *p, size_t size, int flags)
{
	void *q = hz_off_mallocx(size, flags);
	if (q) {
		size_t have = hz_off_malloc_usable_size(p);
		memcpy(q, p, have < size ? have : size);
		hz_glibc_free(p);
	}
	return q;
}
