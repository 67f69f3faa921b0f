/* HUGEZERO_STATS (stats.c): the rooms' figures walked into the report,
 * here at the top so that obs/ calls no room above it. */
#include <errno.h>

#include "../allocator/allocator.h"
#include "../obs/obs.h"
#include "../os/os.h"
#include "preload.h"

/* Every figure, through fn: obs/'s head, the allocator's, obs/'s tail
 * (the report adds its tail itself). */
static void rooms(hz_counter_fn fn, void *arg)
{
	hz_large_counters(fn, arg);
	hz_hardened_counters(fn, arg);
	hz_small_counters(fn, arg);
}

static int finish(struct hz_report *r)
{
	rooms(hz_report_figure, r);
	return hz_report_end(r);
}

int hz_stats_write(const char *path, const char *format)
{
	struct hz_report r;
	return hz_report_begin(&r, path, format) ? -1 : finish(&r);
}

int hz_stats_find(const char *name, uint64_t *value)
{
	struct hz_obs_find f = {name, 0, 0};
	hz_obs_head(hz_obs_find_figure, &f);
	rooms(hz_obs_find_figure, &f);
	hz_obs_tail(hz_obs_find_figure, &f);
	if (!f.found)
		return ENOENT;
	*value = f.value;
	return 0;
}

/* The interval's thread rewrites the report until the process ends. */
static void *interval_main(void *arg)
{
	(void)arg;
	for (int said = 0;;) {
		hz_os_sleep_ms(hz_report_interval());
		struct hz_report r;
		int rc = hz_report_begin_interval(&r) ? -1 : finish(&r);
		if (rc && !said) { /* once: it may fail every time */
			hz_os_log("cannot write the report to ", hz_report_path(), NULL);
			said = 1;
		}
	}
	return NULL;
}

int hz_stats_start(void)
{
	int e = hz_report_interval() && hz_report_path()[0] ? hz_os_thread_start(interval_main, NULL) : 0;
	if (e)
		hz_report_no_interval();
	return e;
}

void hz_stats_child_tick(void)
{
	if (hz_report_child_due() && hz_os_thread_start(interval_main, NULL))
		hz_os_log("cannot start the HUGEZERO_STATS_INTERVAL_MS thread in a forked child", NULL, NULL);
}

/* At exit: a preloaded library's destructors run after the program's. */
__attribute__((destructor)) static void stats_at_exit(void)
{
	int saved = errno;
	struct hz_report r;
	int rc = hz_report_begin_exit(&r);
	if (rc != 1 && (rc || finish(&r)))
		hz_os_log("cannot write the report to ", hz_report_path(), NULL);
	errno = saved;
}
