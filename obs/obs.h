/* obs/: observability. It owns the counters (calls and bytes per
 * operation and size class, per thread; what each kernel cleared), the
 * per-call A/B arms, call-site sampling, and the report in three formats,
 * written on demand, at an interval and at exit.
 *
 * It counts and reports, and decides nothing: the rooms above it tell it
 * what happened (the allocator, the exported ABI), and walk the figures
 * other rooms keep into the report (hz_obs_head, then theirs, then
 * hz_obs_tail). It stands on arch/ (the kernel table, the engine
 * whose clears it counts) and the OS contract (os/os.h), and
 * knows nothing of allocation, the exported ABI or options. The arms say
 * which arm a call takes and record its time; the caller makes the call
 * (ab.h).
 *
 *   counters.h   per-thread and engine counters, the counted clears
 *   ab.h         the A/B arms and their statistics
 *   callsites.h  call sites of large clears
 *   report.h     the report: its formats' walk, its files
 *   emit.h       one emitter per format behind one interface
 *   fork_reset.h       fork, for the whole room (its top) */
#ifndef HZ_OBS_H
#define HZ_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

/* One named figure: gauge is 1 for a state (bytes in use), 0 for a running
 * total (calls so far). */
typedef void (*hz_counter_fn)(void *arg, const char *name, uint64_t value, int gauge);
/* A room's source of figures (its *_counters function) calls fn once per
 * figure, in a fixed order, allocating nothing. */

#pragma GCC visibility pop

#endif
