/* HUGEZERO_MODE=off: memset and the whole malloc family forward to glibc,
 * so one binary compares process against process (preload.h). Decided at
 * the first call into the allocator, before it hands out a block, or by
 * the constructor if it comes first: in either case no block of this
 * allocator can reach glibc's free. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <malloc.h>
#include <string.h>

#include "../allocator/prim.h"
#include "../allocator/registry.h"
#include "../allocator/small.h"
#include "dynamic.h"
#include "glibc.h"
#include "preload.h"

int hz_mode_off;

int hz_off_decide(const char *mode)
{
	int off = mode && !strcmp(mode, "off") && hz_glibc_malloc && hz_glibc_free;
	if (mode && strcmp(mode, "off") && strcmp(mode, "on"))
		hz_os_log("ignoring HUGEZERO_MODE: not on or off: ", mode, NULL);
	/* The __libc_* references bind to the first definition: another
	 * allocator preloaded after this library (tcmalloc, mimalloc) may
	 * define them. Off means glibc, or nothing. */
	Dl_info di;
	if (off && !(dladdr((void *)hz_glibc_malloc, &di) && di.dli_fname &&
		     strstr(di.dli_fname, "/libc.so."))) {
		hz_os_log("ignoring HUGEZERO_MODE=off: __libc_malloc is not glibc's (another allocator "
			  "is preloaded)", NULL, NULL);
		off = 0;
	}
	hz_mode_off = off;
	if (off) /* every free then reaches hz_free_slow, which forwards */
		hz_reg_widen();
	return off;
}

/* glibc's own function of that name, looked up once. */
#define GLIBC(type, name) ((type)hz_glibc_lookup(&glibc_##name, #name))
static void *glibc_malloc_usable_size, *glibc_malloc_trim, *glibc_mallinfo2, *glibc_mallinfo,
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

struct mallinfo hz_off_mallinfo(void)
{
	return GLIBC(struct mallinfo (*)(void), mallinfo)();
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
	void *p = align > 16 ? hz_glibc_memalign(align, size) : hz_glibc_malloc(size);
	if (p && (flags & HZ_JE_ZERO))
		memset(p, 0, size);
	return p;
}

void *hz_off_rallocx(void *p, size_t size, int flags)
{
	return hz_moved(hz_off_mallocx(size, flags), p, hz_off_malloc_usable_size(p), size);
}
