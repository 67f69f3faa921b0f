/* preload/off.h: HUGEZERO_MODE=off, where memset and the whole malloc
 * family forward to glibc, so one binary compares process against
 * process. The mode itself is decided at the start (start.h); these are
 * its ways for the calls glibc's allocator has no core entry point for:
 * glibc's own function of that name, looked up once (dynamic.h), and
 * the allocating forms' way (alloc.h's slow paths come here first). */
#ifndef HZ_OFF_H
#define HZ_OFF_H

#include <malloc.h>
#include <stddef.h>

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

size_t hz_off_malloc_usable_size(void *p);
int hz_off_malloc_trim(size_t pad);
struct mallinfo2 hz_off_mallinfo2(void);
struct mallinfo hz_off_mallinfo(void);
void hz_off_malloc_stats(void);
int hz_off_mallopt(int param, int value);
/* Every allocating form on glibc's blocks, with jemalloc's flags
 * (alignment and zeroing honoured; sizes as glibc gives them; nothing
 * resized in place). */
HZ_NOINLINE void *hz_off_mallocx(size_t size, int flags);
HZ_NOINLINE void *hz_off_rallocx(void *p, size_t size, int flags);

#pragma GCC visibility pop

#endif
