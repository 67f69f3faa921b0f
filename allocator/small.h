/* allocator/small.h: small allocations go to jemalloc through its
 * extended API. The library carries its own copy of jemalloc, built from
 * Debian's static archive with every symbol renamed hz_je_*
 * (scripts/jemalloc-rename.sh): its malloc symbols never become the
 * program's, and the program's mallocx & co. (which hugezero exports,
 * routed by owner) never reach it by name. */
#ifndef HZ_SMALL_H
#define HZ_SMALL_H

#include <stddef.h>

/* Its standard entry points, which have its fast paths. */
void *hz_je_malloc(size_t size);
void *hz_je_calloc(size_t n, size_t size);
void *hz_je_realloc(void *ptr, size_t size);
void hz_je_free(void *ptr);
size_t hz_je_malloc_usable_size(void *ptr);
/* Its extended API. */
void *hz_je_mallocx(size_t size, int flags);
void *hz_je_rallocx(void *ptr, size_t size, int flags);
size_t hz_je_xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t hz_je_sallocx(const void *ptr, int flags);
void hz_je_dallocx(void *ptr, int flags);
void hz_je_sdallocx(void *ptr, size_t size, int flags);
size_t hz_je_nallocx(size_t size, int flags);
int hz_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int hz_je_mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int hz_je_mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
		       size_t newlen);
void hz_je_malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
			      const char *opts);

/* jemalloc's flags (jemalloc/jemalloc_macros.h). */
#define HZ_JE_ZERO 0x40                        /* MALLOCX_ZERO */
#define HZ_JE_LG_ALIGN(la) ((int)(la))         /* MALLOCX_LG_ALIGN */
#define HZ_JE_LG_ALIGN_MASK 0x3f               /* the alignment's bits */
#define HZ_JE_ALIGN_OF(flags) ((size_t)1 << ((flags) & HZ_JE_LG_ALIGN_MASK) & ~(size_t)1)
#define HZ_JE_TCACHE_MASK 0xfff00              /* MALLOCX_TCACHE(tc) bits */
#define HZ_JE_ARENA_MASK 0xfff00000u           /* MALLOCX_ARENA(a) bits */

#endif
