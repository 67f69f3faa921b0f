/* preload/: what a program links against, and only that, each file a thin
 * layer over the rooms below. Bottom-up (README.md, Layout): glibc.h
 * (glibc's versioned names), options.h (the one option table), dynamic.h
 * (the lookups only the shared library can make), start.h (the
 * allocator's start and the mode), alloc.h (the fast and slow paths),
 * off.h (HUGEZERO_MODE=off's calls), fork.h (the library's fork
 * handlers), verbose.h, init.h (the constructor: above everything it
 * configures; below only the exported ABI, whose every file references
 * it so that a static link takes it); then the exported ABI, memset.c,
 * malloc.c, cxx.c, jemalloc_api.c, api.c, and atfork.c (every other
 * library's registration caught). Every other room lies below this one,
 * and nothing there calls up into it. */
#ifndef HZ_PRELOAD_H
#define HZ_PRELOAD_H

#include "../arch/common.h"

/* What the library exports: the interposed ABI and the hz_ API (the
 * version script hugezero.map lists them). */
#define HZ_EXPORT __attribute__((visibility("default")))

#endif
