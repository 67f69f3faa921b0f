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

/* The interval's thread rewrites the report every interval until the
 * process ends, or until a quiesce asks it to end (stop; it sleeps in
 * slices of at most SLICE_MS to see it). No lock: a fork copies nothing
 * held. */
#define SLICE_MS 20
static int interval_running, interval_stop, interval_pid; /* pid: a forked child's copy runs none */

static void *interval_main(void *arg)
{
	(void)arg;
	for (int said = 0;;) {
		for (uint64_t left = hz_report_interval(); left;) {
			uint64_t ms = left < SLICE_MS ? left : SLICE_MS;
			if (__atomic_load_n(&interval_stop, __ATOMIC_ACQUIRE))
				goto end;
			hz_os_sleep_ms(ms);
			left -= ms;
		}
		if (__atomic_load_n(&interval_stop, __ATOMIC_ACQUIRE))
			break;
		struct hz_report r;
		int rc = hz_report_begin_interval(&r) ? -1 : finish(&r);
		if (rc && !said) { /* once: it may fail every time */
			hz_os_log("cannot write the report to ", hz_report_path(), NULL);
			said = 1;
		}
	}
end:
	__atomic_store_n(&interval_running, 0, __ATOMIC_RELEASE);
	return NULL;
}

static int interval_start(void)
{
	__atomic_store_n(&interval_pid, hz_os_pid(), __ATOMIC_RELAXED);
	__atomic_store_n(&interval_running, 1, __ATOMIC_RELEASE);
	int e = hz_os_thread_start(interval_main, NULL);
	if (e)
		__atomic_store_n(&interval_running, 0, __ATOMIC_RELEASE);
	return e;
}

int hz_stats_start(void)
{
	int e = hz_report_interval() && hz_report_path()[0] ? interval_start() : 0;
	if (e)
		hz_report_no_interval();
	return e;
}

void hz_stats_child_tick(void)
{
	if (hz_report_child_due() && interval_start())
		hz_os_log("cannot start the HUGEZERO_STATS_INTERVAL_MS thread again", NULL, NULL);
}

int hz_stats_quiesce(int forever, uint64_t bound_ns)
{
	if (!__atomic_load_n(&interval_running, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&interval_pid, __ATOMIC_RELAXED) != hz_os_pid())
		return 0;
	__atomic_store_n(&interval_stop, 1, __ATOMIC_RELEASE);
	uint64_t end = hz_os_now_ns() + bound_ns;
	while (__atomic_load_n(&interval_running, __ATOMIC_ACQUIRE) && hz_os_now_ns() < end)
		hz_os_sleep_ms(1);
	if (!__atomic_load_n(&interval_running, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&interval_stop, 0, __ATOMIC_RELEASE);
		if (!forever) /* again at the next large call, as in a forked child */
			__atomic_store_n(&hz_report_child_pending, 1, __ATOMIC_RELAXED);
	}
	return 1;
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
