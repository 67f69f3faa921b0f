/* The library's constructor, at the top of preload/: the options read
 * once, and each room configured from them. The allocator is configured
 * at the first call into it (start.c) or here, whichever comes first; the
 * engine and observability here. Until then memset works on the engine's
 * starting policy (arch/engine.c). */
#include <stdio.h>
#include <string.h>

#include "../allocator/allocator.h"
#include "../arch/arch.h"
#include "../obs/obs.h"
#include "preload.h"

const int hz_init_linked = 1;

/* ---- observability: the report, the arms, call sites ---- */

static void configure_report(void)
{
	hz_report_process(hz_mode_off);
	int bad = hz_report_setup(hz_option(HZ_OPT_STATS)->str, hz_option(HZ_OPT_STATS_FORMAT)->str,
				  hz_option(HZ_OPT_STATS_INTERVAL_MS)->size, hz_option(HZ_OPT_LABELS)->str);
	if (bad & HZ_REPORT_NO_CWD)
		hz_os_log("ignoring HUGEZERO_STATS: no current directory", NULL, NULL);
	if (bad & HZ_REPORT_TOO_LONG)
		hz_os_log("ignoring HUGEZERO_STATS: path too long", NULL, NULL);
	if (bad & HZ_REPORT_BAD_FORMAT)
		hz_os_log("ignoring HUGEZERO_STATS_FORMAT: not text, json or prometheus: ",
			  hz_option(HZ_OPT_STATS_FORMAT)->str, NULL);
	if (bad & HZ_REPORT_BAD_LABELS)
		hz_os_log("ignoring HUGEZERO_LABELS: not name=value,... (names of its own, once each, UTF-8 values, under 500 bytes): ",
			  hz_option(HZ_OPT_LABELS)->str, NULL);
	if (hz_stats_start())
		hz_os_log("cannot start the HUGEZERO_STATS_INTERVAL_MS thread", NULL, NULL);
}

static void configure_ab(void)
{
	static void *next;
	const struct hz_option_value *ab = hz_option(HZ_OPT_AB);
	if (!ab->given)
		return;
	/* glibc's memset: the next definition after this library's. */
	hz_ab_baseline = (void *(*)(void *, int, size_t))hz_glibc_lookup(&next, "memset");
	if (!hz_ab_baseline) {
		hz_os_log("HUGEZERO_AB: glibc's memset not found; arms off", NULL, NULL);
		return;
	}
	const struct hz_option_value *seed = hz_option(HZ_OPT_AB_SEED), *min = hz_option(HZ_OPT_AB_MIN);
	if (hz_ab_setup(ab->frac, seed->given ? seed->size : hz_os_realtime_ns() / 1000000000u,
			min->size > HZ_FRONT_MAX ? min->size : HZ_FRONT_MAX + 1))
		hz_os_log("HUGEZERO_AB: no memory for the arms' records; arms off", NULL, NULL);
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
	if (hz_callsites_setup(period > 0xffffffffu ? 0xffffffffu : (unsigned)period, bt))
		hz_os_log("HUGEZERO_CALLSITES: no memory for the table; call sites off", NULL, NULL);
}

/* Every room configured from the options. Idempotent. */
static void init(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	hz_fork_register();
	hz_allocator_start();
	hz_counters_setup();
	configure_report();
	int verbose = hz_option(HZ_OPT_VERBOSE)->num;
	if (hz_mode_off) {
		/* memset through the pointer, to glibc's; no arms. */
		static void *next;
		hz_memset_fn glibc = (hz_memset_fn)hz_glibc_lookup(&next, "memset");
		if (glibc)
			hz_memset_divert(glibc);
		if (verbose)
			hz_os_log(hz_mode_drawn ? "the off mode, drawn by HUGEZERO_PROCESS_AB"
						: "HUGEZERO_MODE=off",
				  ": memset and the malloc family are glibc's", NULL);
		return;
	}
	hz_options_start_engine(hz_sees_jumps);
	configure_ab();
	configure_callsites();
	if (verbose)
		hz_verbose_print();
	if (verbose && hz_mode_drawn)
		hz_os_log("the on mode, drawn by HUGEZERO_PROCESS_AB", NULL, NULL);
	hz_zeroer_allow(1);
	hz_helpers_allow();
}

__attribute__((constructor(101))) static void hz_constructor(void)
{
	init();
}

/* Exit has begun: the background zeroer and the helpers end, none starts
 * again. */
__attribute__((destructor)) static void hz_destructor(void)
{
	hz_zeroer_exit();
	hz_helpers_exit();
}
