/* preload/: what a program links against, and only that. The exported
 * memset family (memset.c), glibc's malloc family (malloc.c), jemalloc's
 * extended API (jemalloc_api.c) and the public hz_* functions (api.c),
 * each a thin layer over the rooms below; HUGEZERO_MODE=off (off.c) and
 * glibc's versioned names (glibc.h); the lookups only a shared library can
 * make (dynamic.c, or static.c in libhugezero.a); and the library's
 * start: the option table (options.c), from which init.c configures every
 * room. Every other room lies below this one, and nothing there calls up
 * into it. This header holds what its files share. */
#ifndef HZ_PRELOAD_H
#define HZ_PRELOAD_H

#include <stddef.h>

#include "../arch/common.h"

/* What the library exports: the interposed ABI and the hz_ API (the
 * version script hugezero.map lists them). */
#define HZ_EXPORT __attribute__((visibility("default")))

/* ---- init.c ---- */

/* The constructor's work: every room configured from the options. Idempotent. */
HZ_HIDDEN void hz_init(void);
/* The allocator's part of it, which the first call into the allocator
 * makes when it comes before the constructor: the options read, the mode
 * decided, the arenas configured. Allocates nothing; idempotent. */
HZ_HIDDEN HZ_NOINLINE void hz_allocator_start(void);
/* Whether hz_allocator_start has run. */
HZ_HIDDEN extern int hz_allocator_started;

/* ---- off.c: HUGEZERO_MODE=off ---- */

/* 1 when memset and the malloc family forward to glibc; set once, by
 * hz_allocator_start, before the allocator hands out a block. */
HZ_HIDDEN extern int hz_mode_off;
/* Decides the mode for mode ("on" or "off"): off takes effect only where
 * glibc's allocator is there to forward to. Returns hz_mode_off. */
HZ_HIDDEN int hz_off_decide(const char *mode);
/* Off mode's way for calls that glibc's allocator has no core entry
 * point for: glibc's own function of that name. */
HZ_HIDDEN size_t hz_off_malloc_usable_size(void *p);
HZ_HIDDEN int hz_off_malloc_trim(size_t pad);
HZ_HIDDEN struct mallinfo2 hz_off_mallinfo2(void);
HZ_HIDDEN struct mallinfo hz_off_mallinfo(void);
HZ_HIDDEN void hz_off_malloc_stats(void);
HZ_HIDDEN int hz_off_mallopt(int param, int value);
/* jemalloc's extended API on glibc's blocks (alignment and zeroing
 * honoured; sizes as glibc gives them; nothing resized in place). */
HZ_HIDDEN HZ_NOINLINE void *hz_off_mallocx(size_t size, int flags);
HZ_HIDDEN HZ_NOINLINE void *hz_off_rallocx(void *p, size_t size, int flags);

/* ---- malloc.c ---- */

/* malloc's and calloc's way past the fast paths (fast.h): a block of size
 * bytes, cleared when zero is 1. */
HZ_HIDDEN HZ_NOINLINE void *hz_alloc_slow(size_t size, int zero);
/* free's way for a pointer that may be the arenas' (or glibc's). */
HZ_HIDDEN HZ_NOINLINE void hz_free_slow(void *p);
/* A block aligned to align (a power of two); NULL and errno ENOMEM. */
HZ_HIDDEN void *hz_alloc_aligned(size_t align, size_t size);

/* glibc's message for a pointer free cannot take, and abort. */
HZ_HIDDEN __attribute__((noreturn)) void hz_bad_pointer(const char *what);
/* A block moved between owners: min(have, size) bytes of p copied into
 * q, p freed (by owner). Returns q; NULL (p untouched) when q is. */
HZ_HIDDEN void *hz_moved(void *q, void *p, size_t have, size_t size);

#endif
