/* preload/stats.h: HUGEZERO_STATS, the report written: every room's
 * figures walked into obs/'s report (report.h) on demand, from the
 * interval's thread and at exit; a figure found by name (hz_stat). */
#ifndef HZ_STATS_H
#define HZ_STATS_H

#include <stdint.h>

#include "../arch/common.h"
#include "../obs/report.h"

#pragma GCC visibility push(hidden)

/* Starts the interval's thread when one was set up (hz_report_setup):
 * 0, or an error number. */
int hz_stats_start(void);
/* The report now (hz_stats_dump): 0, or -1 with errno. */
int hz_stats_write(const char *path, const char *format);
/* The figure called name into *value: 0, or ENOENT. */
int hz_stats_find(const char *name, uint64_t *value);

HZ_NOINLINE void hz_stats_child_tick(void);
/* On the large paths (a load and a branch): starts a forked child's
 * interval thread once it is due (report.h). */
static inline void hz_stats_child_check(void)
{
	if (hz_unlikely(__atomic_load_n(&hz_report_child_pending, __ATOMIC_RELAXED)))
		hz_stats_child_tick();
}

#pragma GCC visibility pop

#endif
