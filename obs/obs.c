/* The report's figures in one walk (obs.h): the engine's counters, the
 * registered sources', the arms' drops and the process's memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../os/os.h"
#include "ab.h"
#include "counters.h"
#include "obs.h"

static hz_source_fn sources[HZ_OBS_SOURCES];
static unsigned nsources;

int hz_obs_add_source(hz_source_fn fn)
{
	if (nsources == HZ_OBS_SOURCES)
		return ENOSPC;
	sources[nsources++] = fn;
	return 0;
}

/* The value in kB after key in a /proc file, in bytes; 0 if absent. */
static uint64_t proc_kb(const char *path, const char *key)
{
	char buf[4096];
	size_t len;
	if (hz_os_read_file(path, buf, sizeof buf, &len))
		return 0;
	const char *p = strstr(buf, key);
	return p ? (uint64_t)strtoull(p + strlen(key), NULL, 10) << 10 : 0;
}

void hz_obs_each(hz_counter_fn fn, void *arg)
{
	hz_engine_counters(fn, arg);
	for (unsigned i = 0; i < nsources; i++)
		sources[i](fn, arg);
	fn(arg, "ab.dropped", hz_ab_dropped(), 0);
	fn(arg, "process.rss_bytes", proc_kb("/proc/self/status", "\nVmRSS:"), 1);
	fn(arg, "process.peak_rss_bytes", proc_kb("/proc/self/status", "\nVmHWM:"), 1);
	fn(arg, "process.anon_huge_bytes", proc_kb("/proc/self/smaps_rollup", "\nAnonHugePages:"), 1);
}

struct find {
	const char *name;
	uint64_t value;
	int found;
};

static void find_one(void *arg, const char *name, uint64_t value, int gauge)
{
	struct find *f = arg;
	(void)gauge;
	if (!f->found && !strcmp(name, f->name))
		f->value = value, f->found = 1;
}

int hz_obs_find(const char *name, uint64_t *value)
{
	struct find f = {name, 0, 0};
	hz_obs_each(find_one, &f);
	if (!f.found)
		return ENOENT;
	*value = f.value;
	return 0;
}
