/* allocator/limits.h: what the process may use, as the kernel will
 * enforce it: the machine's memory and swap, the overcommit mode, the
 * address-space rlimits, and the memory cgroup's limit and usage (cgroup
 * v2 memory.max and memory.high, v1 memory.limit_in_bytes, the least of
 * the process's group and its ancestors). Read through os/os.h at setup,
 * the cgroup's again by hz_limits_refresh; the arenas and the purge read
 * the figures. Where a file cannot be read (no /proc, no /sys, no fd
 * left), the figure is unknown: no cgroup limit, overcommit mode 0 (the
 * kernel's heuristic, which refuses a single mapping larger than memory
 * and swap). */
#ifndef HZ_LIMITS_H
#define HZ_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

#define HZ_LIMIT_NONE SIZE_MAX

struct hz_limits {
	size_t ram, swap;      /* sysinfo(2); 0 when refused */
	int overcommit;        /* vm.overcommit_memory: 0, 1 or 2 */
	size_t as, data;       /* RLIMIT_AS, RLIMIT_DATA (HZ_LIMIT_NONE) */
	size_t cgroup;         /* the memory cgroup's limit (HZ_LIMIT_NONE) */
	int cgroup_version;    /* 1 or 2; 0 when no memory controller was found */
	char dir[192];         /* the limiting group's directory, its usage file's */
};
extern struct hz_limits hz_limits;

/* Reads every figure (at setup, before the first block; no lock held). */
void hz_limits_read(void);
/* Reads the cgroup's limit again (it may be changed at run time). */
void hz_limits_refresh(void);
/* The limiting cgroup's usage now, in bytes (v2 memory.current, v1
 * memory.usage_in_bytes); HZ_LIMIT_NONE when there is no limit or it
 * cannot be read. Three system calls. */
size_t hz_limits_usage(void);
/* Of that usage, the file pages the kernel drops first when the group
 * reaches its limit (memory.stat's inactive_file, v1 total_inactive_file):
 * page cache, not pressure; 0 when it cannot be read. */
size_t hz_limits_reclaimable(void);
/* The largest block the kernel would map for anyone: memory and swap
 * under the heuristic (mode 0, and 2, whose commit limit is lower
 * still), the address space in mode 1; never more than the rlimits. */
size_t hz_limits_max_block(size_t address_space);

#pragma GCC visibility pop

#endif
