/* preload/start.h: the allocator's start, which the first call into the
 * allocator makes when it comes before the library's constructor (or the
 * constructor, if it comes first): the options read, the mode decided
 * (HUGEZERO_MODE=off takes effect only where glibc's allocator is there to
 * forward to), the arenas configured. Allocates nothing; idempotent. */
#ifndef HZ_START_H
#define HZ_START_H

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

HZ_NOINLINE void hz_allocator_start(void);
/* Whether hz_allocator_start has run. */
extern int hz_allocator_started;
/* 1 when memset and the malloc family forward to glibc; set once, by
 * hz_allocator_start, before the allocator hands out a block. */
extern int hz_mode_off;

#pragma GCC visibility pop

#endif
