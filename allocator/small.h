/* allocator/small.h: small allocations go to jemalloc through its
 * extended API (Debian's libjemalloc, linked by libhugezero.so). Only
 * these entry points are used; jemalloc's own malloc symbols never become
 * the program's, as the library comes first in the search order. */
#ifndef HZ_SMALL_H
#define HZ_SMALL_H

#include <stddef.h>

void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t sallocx(const void *ptr, int flags);
void dallocx(void *ptr, int flags);
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

#define HZ_JE_ZERO 0x40              /* MALLOCX_ZERO */
#define HZ_JE_LG_ALIGN(la) ((int)(la)) /* MALLOCX_LG_ALIGN */

#endif
