/* obs/fork_reset.h: fork, for the whole room, at its top. Called by the
 * library's one set of fork handlers (preload/fork_handlers.c), never registered
 * here: the counters' lock is held across the fork; the child starts its
 * counters, arms, call sites and report from zero, its figures being its
 * own. */
#ifndef HZ_OBS_FORK_H
#define HZ_OBS_FORK_H

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

void hz_obs_fork_prepare(void);
void hz_obs_fork_parent(void);
void hz_obs_fork_child(void);
/* Last in the child, once the whole library is consistent again: what
 * the child may start (the report's interval thread). */
void hz_obs_fork_child_ready(void);

#pragma GCC visibility pop

#endif
