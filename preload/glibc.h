/* glibc's own allocator: the baseline of HUGEZERO_MODE=off. Its core entry
 * points are reached without dlsym, through glibc's versioned __libc_*
 * names (the library exports none of them, so these references cannot
 * bind back to it); they are weak, NULL where no shared glibc is there (a
 * static program). HZ_GLIBC_BASE, glibc's base symbol version on this
 * architecture, comes from the build. */
#ifndef HZ_GLIBC_H
#define HZ_GLIBC_H

#include <stddef.h>

#define HZ_GLIBC_REF(local, name) __asm__(".symver " #local "," #name "@" HZ_GLIBC_BASE)
HZ_GLIBC_REF(hz_glibc_malloc, __libc_malloc);
HZ_GLIBC_REF(hz_glibc_calloc, __libc_calloc);
HZ_GLIBC_REF(hz_glibc_realloc, __libc_realloc);
HZ_GLIBC_REF(hz_glibc_free, __libc_free);
HZ_GLIBC_REF(hz_glibc_memalign, __libc_memalign);

extern void *hz_glibc_malloc(size_t size) __attribute__((weak));
extern void *hz_glibc_calloc(size_t n, size_t size) __attribute__((weak));
extern void *hz_glibc_realloc(void *p, size_t size) __attribute__((weak));
extern void hz_glibc_free(void *p) __attribute__((weak));
extern void *hz_glibc_memalign(size_t align, size_t size) __attribute__((weak));

#endif
