/* preload/: what a program links against, and only that, each file a thin
 * layer over the rooms below: the options, the allocator's start and
 * mode, the slow paths every exported form shares, the report's writer,
 * the fork handlers, the constructor, then the exported ABI (memset.c,
 * malloc.c, cxx.c, jemalloc_api.c, api.c, atfork.c). The order of its
 * files, and of the rooms below it: docs/layers.txt. */
#ifndef HZ_PRELOAD_H
#define HZ_PRELOAD_H

#include "../arch/common.h"

/* What the library exports: the interposed ABI and the hz_ API (the
 * version script hugezero.map lists them). */
#define HZ_EXPORT __attribute__((visibility("default")))

#endif
