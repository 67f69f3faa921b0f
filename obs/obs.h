/* obs/: observability. It owns the counters (calls and bytes per
 * operation and size class, per thread; what each kernel cleared), the
 * per-call A/B arms, call-site sampling, and the report in three formats,
 * written on demand, at an interval and at exit.
 *
 * It counts and reports, and decides nothing: the rooms above it tell it
 * what happened (the allocator, the exported ABI), and the figures other
 * rooms keep reach the report through hz_obs_add_source, the one
 * registration point. It stands on arch/ (the kernel table, the engine
 * whose clears it counts) and the OS contract (os/os.h), and
 * knows nothing of allocation, the exported ABI or options. The arms say
 * which arm a call takes and record its time; the caller makes the call
 * (ab.h).
 *
 *   counters.h   per-thread and engine counters, the counted clears
 *   ab.h         the A/B arms and their statistics
 *   callsites.h  call sites of large clears
 *   report.h     the report: its files, the interval, the exit
 *   emit.h       one emitter per format behind one interface
 *   fork.h       fork, for the whole room (its top) */
#ifndef HZ_OBS_H
#define HZ_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

/* One named figure: gauge is 1 for a state (bytes in use), 0 for a running
 * total (calls so far). */
typedef void (*hz_counter_fn)(void *arg, const char *name, uint64_t value, int gauge);
/* A source of figures calls fn once per figure, in a fixed order,
 * allocating nothing. */
typedef void (*hz_source_fn)(hz_counter_fn fn, void *arg);

#define HZ_OBS_SOURCES 4
/* Adds a source, whose figures follow the engine's in the report in the
 * order added. At setup, single-threaded; 0, or ENOSPC when full. */
int hz_obs_add_source(hz_source_fn fn);

/* Calls fn once per figure, in a fixed order: the engine's counters, the
 * sources', the arms' drops, then the process's memory (RSS, peak RSS,
 * transparent huge pages mapped). */
void hz_obs_each(hz_counter_fn fn, void *arg);
/* The figure called name into *value: 0, or ENOENT. */
int hz_obs_find(const char *name, uint64_t *value);

#pragma GCC visibility pop

#endif
