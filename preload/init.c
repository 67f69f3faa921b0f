/* The library's start: the options read once, and each room configured
 * from them (preload.h). The allocator is configured at the first call
 * into it or by the constructor, whichever comes first; the engine and
 * observability by the constructor. Until then memset works on the
 * engine's starting policy (arch/engine.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../allocator/background.h"
#include "../allocator/large.h"
#include "../allocator/limits.h"
#include "../allocator/small.h"
#include "../arch/arch.h"
#include "../obs/ab.h"
#include "../obs/callsites.h"
#include "../obs/counters.h"
#include "../obs/report.h"
#include "dynamic.h"
#include "fork.h"
#include "glibc.h"
#include "options.h"
#include "preload.h"

/* ---- the allocator: the mode, the routing, the arenas ---- */

int hz_allocator_started;

/* Two threads' first calls may come at once (before the constructor, in
 * a program whose other libraries start threads): one starts the
 * allocator, the other waits for it, a few microseconds. A signal handler
 * interrupting the start on its own thread does not wait for itself: it
 * goes on with the allocator as it finds it. */
void hz_allocator_start(void)
{
	static int starting;
	static HZ_TLS int starting_here;
	if (__atomic_load_n(&hz_allocator_started, __ATOMIC_ACQUIRE) || starting_here)
		return;
	starting_here = 1;
	if (__atomic_exchange_n(&starting, 1, __ATOMIC_ACQ_REL)) {
		starting_here = 0;
		while (!__atomic_load_n(&hz_allocator_started, __ATOMIC_ACQUIRE))
			hz_os_yield();
		return;
	}
	hz_os_init();
	hz_options_load();
	if (!hz_off_decide(hz_option(HZ_OPT_MODE)->str))
		__atomic_store_n(&hz_large_min, hz_options_start_arenas(), __ATOMIC_RELAXED);
	__atomic_store_n(&hz_allocator_started, 1, __ATOMIC_RELEASE);
	starting_here = 0;
}

/* ---- observability: the report, the arms, call sites ---- */

static void configure_report(void)
{
	int bad = hz_report_setup(hz_option(HZ_OPT_STATS)->str, hz_option(HZ_OPT_STATS_FORMAT)->str,
				  hz_option(HZ_OPT_STATS_INTERVAL_MS)->size);
	if (bad & HZ_REPORT_NO_CWD)
		hz_os_log("ignoring HUGEZERO_STATS: no current directory", NULL, NULL);
	if (bad & HZ_REPORT_TOO_LONG)
		hz_os_log("ignoring HUGEZERO_STATS: path too long", NULL, NULL);
	if (bad & HZ_REPORT_BAD_FORMAT)
		hz_os_log("ignoring HUGEZERO_STATS_FORMAT: not text, json or prometheus: ",
			  hz_option(HZ_OPT_STATS_FORMAT)->str, NULL);
	if (bad & HZ_REPORT_NO_THREAD)
		hz_os_log("cannot start the HUGEZERO_STATS_INTERVAL_MS thread", NULL, NULL);
}

/* A fraction from 0 to 1 into *f: 0, or -1. */
static int parse_fraction(const char *s, double *f)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= 0 && v <= 1))
		return -1;
	*f = v;
	return 0;
}

static void configure_ab(void)
{
	static void *next;
	const char *ab = hz_option(HZ_OPT_AB)->str;
	double share;
	if (!ab)
		return;
	if (parse_fraction(ab, &share)) {
		hz_os_log("ignoring HUGEZERO_AB: not a fraction from 0 to 1: ", ab, NULL);
		return;
	}
	/* glibc's memset: the next definition after this library's. */
	hz_ab_memset_fn glibc = (hz_ab_memset_fn)hz_glibc_lookup(&next, "memset");
	if (!glibc) {
		hz_os_log("HUGEZERO_AB: glibc's memset not found; arms off", NULL, NULL);
		return;
	}
	const struct hz_option_value *seed = hz_option(HZ_OPT_AB_SEED), *min = hz_option(HZ_OPT_AB_MIN);
	hz_ab_setup(share, seed->given ? seed->size : hz_os_realtime_ns() / 1000000000u,
		    min->size > HZ_FRONT_MAX ? min->size : HZ_FRONT_MAX + 1, glibc);
}

static void configure_callsites(void)
{
	uint64_t period = hz_option(HZ_OPT_CALLSITES)->size;
	if (!period)
		return;
	hz_backtrace_fn bt = hz_unwind_open();
	if (!bt) {
		hz_os_log("HUGEZERO_CALLSITES: libunwind.so.8 not found; call sites off", NULL, NULL);
		return;
	}
	hz_callsites_setup(period > 0xffffffffu ? 0xffffffffu : (unsigned)period, bt);
}

/* ---- HUGEZERO_VERBOSE ---- */

/* Whether process_madvise releases memory here: one 2 MiB block of a
 * scratch mapping, released as a batch of one. */
static const char *probe_batch(void)
{
	void *p;
	if (hz_os_map(HZ_HUGE_SIZE, HZ_HUGE_SIZE, &p))
		return "unknown";
	((volatile char *)p)[0] = 1;
	struct hz_range r = {p, HZ_HUGE_SIZE};
	struct hz_release_result res;
	hz_os_release_batch(&r, 1, &res);
	hz_os_unmap(p, HZ_HUGE_SIZE);
	return res.fallbacks ? "no (falls back to madvise)" : res.error ? "failed" : "yes";
}

/* The CPU, caches, front end and policy, on stderr; snprintf into a stack
 * buffer: no allocation for these formats. */
static void print_configuration(void)
{
	char line[320];
	snprintf(line, sizeof line, "hugezero %s; process_madvise releases memory: %s", HZ_VERSION,
		 probe_batch());
	hz_os_log(line, NULL, NULL);
	snprintf(line, sizeof line, "cpu %s [%s]", hz_cpu.vendor, hz_cpu.features);
	hz_os_log(line, NULL, NULL);
	static const char *const lv[] = {"L1d", "L2", "L3"};
	for (int l = 0; l < HZ_CACHE_LEVELS; l++) {
		snprintf(line, sizeof line, "%s %zu KiB (%s; sysfs %zu, cpuid %zu)", lv[l],
			 hz_cpu.cache.size[l] >> 10, hz_cpu.source[l], hz_cpu.sysfs.size[l] >> 10,
			 hz_cpu.cpuid.size[l] >> 10);
		hz_os_log(line, NULL, NULL);
	}
	int won = hz_fresh_probe();
	struct hz_fresh_stats f;
	hz_fresh_stats(&f);
	snprintf(line, sizeof line,
		 "fresh memory: a huge page's first touch %llu us, 512 small pages' %llu us (huge pages %s); "
		 "free page reporting %s; new mappings get %s pages (HUGEZERO_FRESH=%s)",
		 (unsigned long long)f.huge_ns / 1000, (unsigned long long)f.small_ns / 1000,
		 won ? "win" : "lose", hz_os_free_page_reporting() ? "on" : "off",
		 hz_fresh_decide() ? "huge" : "small", hz_option(HZ_OPT_FRESH)->str);
	hz_os_log(line, NULL, NULL);
	static const char *const sched[] = {"normal scheduling (SCHED_IDLE and nice 19 refused)",
					    "nice 19 (SCHED_IDLE refused)", "SCHED_IDLE"};
	int can = hz_os_sched_background_probe();
	snprintf(line, sizeof line,
		 "background zeroer %s (HUGEZERO_BACKGROUND), reserve %zu MiB; a thread of it would run at %s",
		 hz_option(HZ_OPT_BACKGROUND)->num ? "on" : "off", hz_option(HZ_OPT_RESERVE)->size >> 20,
		 can < 0 ? "nothing: no thread can be made" : sched[can]);
	hz_os_log(line, NULL, NULL);
	char cg[32] = "none";
	if (hz_limits.cgroup != HZ_LIMIT_NONE)
		snprintf(cg, sizeof cg, "%zu MiB (v%d)", hz_limits.cgroup >> 20, hz_limits.cgroup_version);
	snprintf(line, sizeof line,
		 "limits: memory cgroup %s; dirty budget %zu MiB, reserve %zu MiB; overcommit mode %d; "
		 "largest block %zu MiB; RLIMIT_AS %s, RLIMIT_DATA %s",
		 cg, hz_dirty_max >> 20, hz_zeroer_reserve >> 20, hz_limits.overcommit, hz_large_max >> 20,
		 hz_limits.as == HZ_LIMIT_NONE ? "none" : "set", hz_limits.data == HZ_LIMIT_NONE ? "none" : "set");
	hz_os_log(line, NULL, NULL);
	snprintf(line, sizeof line, "memset front end %s up to %u KiB",
		 hz_memset_front_name(hz_memset_impl), HZ_FRONT_MAX >> 10);
	hz_os_log(line, NULL, NULL);
	snprintf(line, sizeof line, "hinted clears: neighbourhood by %s", hz_kernels[hz_policy.near].name);
	hz_os_log(line, NULL, NULL);
	for (int t = 0; t < HZ_TIERS; t++) {
		snprintf(line, sizeof line, "tier %d below %zu: fill %s, zero %s", t, hz_policy.upto[t],
			 hz_kernels[hz_policy.fill[t]].name, hz_kernels[hz_policy.zero[t]].name);
		hz_os_log(line, NULL, NULL);
	}
}

void hz_init(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	hz_fork_register();
	hz_allocator_start();
	hz_counters_setup();
	configure_report();
	hz_obs_add_source(hz_large_counters);
	hz_obs_add_source(hz_small_counters);
	int verbose = hz_option(HZ_OPT_VERBOSE)->num;
	if (hz_mode_off) {
		/* memset through the pointer, to glibc's; no arms. */
		static void *next;
		hz_memset_fn glibc = (hz_memset_fn)hz_glibc_lookup(&next, "memset");
		if (glibc)
			hz_memset_divert(glibc);
		if (verbose)
			hz_os_log("HUGEZERO_MODE=off: memset and the malloc family are glibc's", NULL, NULL);
		return;
	}
	hz_options_start_engine();
	configure_ab();
	configure_callsites();
	if (verbose)
		print_configuration();
	hz_zeroer_allow(1);
}

__attribute__((constructor(101))) static void hz_constructor(void)
{
	hz_init();
}

/* Exit has begun: the background zeroer ends, none starts again. */
__attribute__((destructor)) static void hz_destructor(void)
{
	hz_zeroer_exit();
}
