/* glibc's own allocator and memset: the baseline of HUGEZERO_MODE=off and
 * of the A/B arms. The core entry points are reached without dlsym,
 * through glibc's versioned __libc_* names (the library exports none of
 * them, so these references cannot bind back to it); they are weak, NULL
 * where no shared glibc is there (a static program). The rest is looked
 * up in libc.so.6's own scope (dlopen of the loaded libc, dlsym), only
 * once the process runs and only when asked for. HZ_GLIBC_BASE, glibc's
 * base symbol version on this architecture, comes from the build. */
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

/* HUGEZERO_MODE=off: 1 when memset and the malloc family forward to
 * glibc; decided by hz_mode_decide (preload/malloc.c, absent where the
 * engine is linked without the malloc family) at the first allocation or
 * at initialisation, whichever comes first. */
__attribute__((visibility("hidden"))) extern int hz_mode_off;
__attribute__((visibility("hidden"), weak)) void hz_mode_decide(void);

/* glibc's definition of name, cached in *cache; NULL when there is none.
 * Not during bootstrap: dlopen and dlsym may allocate. Defined in
 * libhugezero.so only (preload/glibc.c): a static program has no glibc
 * to forward to, and linking dlopen into it would only warn. */
__attribute__((visibility("hidden"), weak)) void *hz_glibc_lookup(void **cache, const char *name);

static inline void *hz_glibc_next(void **cache, const char *name)
{
	return hz_glibc_lookup ? hz_glibc_lookup(cache, name) : NULL;
}

#endif
