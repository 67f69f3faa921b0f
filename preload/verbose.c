/* HUGEZERO_VERBOSE's report (verbose.c). */
#include <stdio.h>

#include "../allocator/allocator.h"
#include "../arch/arch.h"
#include "../os/os.h"
#include "preload.h"

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
void hz_verbose_print(void)
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
		 "fresh memory: a huge page's first touch %llu us (the recent ones' median %llu us), 512 small "
		 "pages' %llu us (huge pages %s); new mappings get %s pages (HUGEZERO_FRESH=%s); free page "
		 "reporting %s",
		 (unsigned long long)f.huge_ns / 1000, (unsigned long long)f.recent_huge_ns / 1000,
		 (unsigned long long)f.small_ns / 1000, won ? "win" : "lose", hz_fresh_decide() ? "huge" : "small",
		 hz_option(HZ_OPT_FRESH)->str, hz_os_free_page_reporting() ? "on" : "off");
	hz_os_log(line, NULL, NULL);
	static const char *const sched[] = {"normal scheduling (SCHED_IDLE and nice 19 refused)",
					    "nice 19 (SCHED_IDLE refused)", "SCHED_IDLE"};
	int can = hz_os_sched_background_probe();
	snprintf(line, sizeof line,
		 "background zeroer %s (HUGEZERO_BACKGROUND), reserve %zu MiB; a thread of it would run at %s",
		 hz_option(HZ_OPT_BACKGROUND)->num ? "on" : "off", hz_option(HZ_OPT_RESERVE)->size >> 20,
		 can < 0 ? "nothing: no thread can be made" : sched[can]);
	hz_os_log(line, NULL, NULL);
	struct hz_populate_stats ps;
	hz_populate_stats(&ps);
	struct hz_helpers_stats hs;
	hz_helpers_stats(&hs);
	snprintf(line, sizeof line,
		 "fresh blocks populated: %s (HUGEZERO_POPULATE); populations and clears from %zu MiB shared by "
		 "the caller and %u helpers on idle cores (HUGEZERO_THREADS)",
		 ps.mode < 0 ? "auto, where recent blocks of the size were mostly touched" : ps.mode ? "always" : "never",
		 HZ_HELPERS_MIN >> 20, hs.helpers);
	hz_os_log(line, NULL, NULL);
	char cg[32] = "none";
	if (hz_limits.cgroup != HZ_LIMIT_NONE)
		snprintf(cg, sizeof cg, "%zu MiB (v%d)", hz_limits.cgroup >> 20, hz_limits.cgroup_version);
	snprintf(line, sizeof line,
		 "limits: memory cgroup %s; dirty budget %zu MiB, reserve %zu MiB; overcommit mode %d; "
		 "largest block %zu MiB; RLIMIT_AS %s, RLIMIT_DATA %s",
		 cg, hz_budget_dirty_max >> 20, hz_budget_reserve_max >> 20, hz_limits.overcommit, hz_block_max >> 20,
		 hz_limits.as == HZ_LIMIT_NONE ? "none" : "set", hz_limits.data == HZ_LIMIT_NONE ? "none" : "set");
	hz_os_log(line, NULL, NULL);
	snprintf(line, sizeof line, "blocks from %zu KiB in the hugepage arenas; smaller ones %s",
		 hz_large_threshold >> 10,
		 hz_small.jemalloc ? "in the embedded jemalloc" : "in the next allocator (HUGEZERO_SMALL=next)");
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

