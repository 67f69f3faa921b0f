/* The library's counters, by name, and the report at exit. */
#ifndef HZ_STATS_H
#define HZ_STATS_H

#include <stdint.h>

typedef void (*hz_counter_fn)(void *arg, const char *name, uint64_t value);

/* Calls fn once per counter, in a fixed order: the engine's, the hugepage
 * arenas', then the small allocator's when the library has one. Takes the
 * arenas' locks one at a time; allocates nothing. */
__attribute__((visibility("hidden"))) void hz_counters_each(hz_counter_fn fn, void *arg);

/* The small allocator's counters (preload/malloc.c defines it; a program
 * linked with the engine alone has none). */
__attribute__((visibility("hidden"), weak)) void hz_small_counters(hz_counter_fn fn, void *arg);

/* Takes HUGEZERO_STATS from the loaded options (initialisation). */
__attribute__((visibility("hidden"))) void hz_stats_init(void);

/* Writes every counter as "name value" lines to fd; 0, or -1 when a
 * write failed. */
__attribute__((visibility("hidden"))) int hz_stats_write(int fd);

#endif
