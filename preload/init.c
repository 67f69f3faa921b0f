/* Library initialisation: detect the CPU and caches, read the options,
 * build the kernel policy. Runs once from a constructor; until then memset
 * works with the pre-initialisation policy (arch/dispatch.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "../allocator/large.h"
#include "../allocator/prim.h"
#include "../arch/arch.h"
#include "../include/hugezero.h"
#include "options.h"
#include "ab.h"
#include "callsites.h"
#include "glibc.h"
#include "stats.h"

struct hz_cpu hz_cpu;
int hz_mode_off;
int hz_callsites_on;
size_t hz_page_size = 4096;

/* Whether process_madvise releases memory here: one 2 MiB block of a
 * scratch mapping, released as a batch of one (verbose mode only). */
static const char *probe_batch(void)
{
	void *p = hz_os_map(HZ_HUGE_SIZE, HZ_HUGE_SIZE);
	if (!p)
		return "unknown";
	((volatile char *)p)[0] = 1;
	struct hz_range r = {p, HZ_HUGE_SIZE};
	struct hz_release_result res;
	hz_os_release_batch(&r, 1, &res);
	hz_os_unmap(p, HZ_HUGE_SIZE);
	return res.fallbacks ? "no (falls back to madvise)" : res.error ? "failed" : "yes";
}

static void print_policy(void)
{
	char line[256];
	snprintf(line, sizeof line, "hugezero %s; process_madvise releases memory: %s", HZ_VERSION,
		 probe_batch());
	hz_log(line, "", "");
	/* snprintf into a stack buffer: no allocation for these formats. */
	snprintf(line, sizeof line, "cpu %s [%s]", hz_cpu.vendor, hz_cpu.features);
	hz_log(line, "", "");
	static const char *const lv[] = {"L1d", "L2", "L3"};
	for (int l = 0; l < HZ_CACHE_LEVELS; l++) {
		snprintf(line, sizeof line, "%s %zu KiB (%s; sysfs %zu, cpuid %zu)", lv[l],
			 hz_cpu.cache.size[l] >> 10, hz_cpu.source[l], hz_cpu.sysfs.size[l] >> 10,
			 hz_cpu.cpuid.size[l] >> 10);
		hz_log(line, "", "");
	}
	hz_memset_fn fns[8];
	const char *names[8];
	unsigned nf = hz_memset_variants(fns, names, 8);
	for (unsigned i = 0; i < nf; i++)
		if (fns[i] == hz_memset_impl)
			hz_log("memset front end ", names[i], " up to 16 KiB");
	snprintf(line, sizeof line, "hinted clears: neighbourhood by %s",
		 hz_kernels[hz_policy.near].name);
	hz_log(line, "", "");
	for (int t = 0; t < HZ_TIERS; t++) {
		snprintf(line, sizeof line, "tier %d below %zu: fill %s, zero %s", t,
			 hz_policy.upto[t], hz_kernels[hz_policy.fill[t]].name,
			 hz_kernels[hz_policy.zero[t]].name);
		hz_log(line, "", "");
	}
}

void hz_init(void)
{
	static int done;
	if (done)
		return;
	done = 1;

	size_t ps = getauxval(AT_PAGESZ);
	if (ps >= 4096 && !(ps & (ps - 1)))
		hz_page_size = ps;

	hz_cpu_detect(&hz_cpu);
	hz_cache_read_sysfs("/sys/devices/system/cpu/cpu0/cache", &hz_cpu.sysfs);
	hz_cache_reconcile(&hz_cpu);

	hz_options_load();
	const struct hz_option_value *o = hz_option_values;
	/* The policy reads L2 and L3 only. */
	static const int cache_opt[][2] = {{HZ_CACHE_L2, HZ_OPT_L2_SIZE}, {HZ_CACHE_L3, HZ_OPT_L3_SIZE}};
	for (int i = 0; i < 2; i++) {
		const struct hz_option_value *v = &o[cache_opt[i][1]];
		if (v->set && v->size)
			hz_cpu.cache.size[cache_opt[i][0]] = v->size, hz_cpu.source[cache_opt[i][0]] = "env";
	}

	if (o[HZ_OPT_DIRTY_MAX].set)
		hz_dirty_max = o[HZ_OPT_DIRTY_MAX].size;
	hz_stats_init();
	if (o[HZ_OPT_CALLOC_DIRTY].set) {
		if (!strcmp(o[HZ_OPT_CALLOC_DIRTY].str, "release"))
			hz_calloc_release = 1;
		else if (strcmp(o[HZ_OPT_CALLOC_DIRTY].str, "clear"))
			hz_log("ignoring HUGEZERO_CALLOC_DIRTY: not clear or release: ",
			       o[HZ_OPT_CALLOC_DIRTY].str, "");
	}
	if (hz_mode_decide)
		hz_mode_decide();
	if (hz_mode_off) {
		/* memset through the pointer, to glibc's; no arms. */
		static void *next;
		hz_memset_fn glibc = (hz_memset_fn)hz_glibc_next(&next, "memset");
		if (glibc) {
			__atomic_store_n(&hz_memset_widest_ok, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&hz_memset_impl, glibc, __ATOMIC_RELAXED);
		}
		if (o[HZ_OPT_VERBOSE].set && o[HZ_OPT_VERBOSE].num)
			hz_log("HUGEZERO_MODE=off: memset and the malloc family are glibc's", "", "");
		return;
	}
	hz_ab_init();
	if (hz_callsites_init)
		hz_callsites_init();
	if (o[HZ_OPT_LARGE_MIN].set && o[HZ_OPT_LARGE_MIN].size >= ((size_t)16 << 10))
		hz_large_min = o[HZ_OPT_LARGE_MIN].size;
	else if (o[HZ_OPT_LARGE_MIN].set)
		hz_log("ignoring HUGEZERO_LARGE_MIN below 16K", "", "");
	if (hz_page_size != HZ_PAGE) /* the arenas assume 4 KiB pages */
		hz_large_min = SIZE_MAX;
	if (o[HZ_OPT_THP].set)
		hz_thp = o[HZ_OPT_THP].num;
	if (o[HZ_OPT_HUGETLB].set)
		hz_hugetlb = o[HZ_OPT_HUGETLB].num;
	if (o[HZ_OPT_DIRTY_DECAY_MS].set)
		hz_dirty_decay_ns = (uint64_t)o[HZ_OPT_DIRTY_DECAY_MS].size * 1000000u;

	struct hz_policy_cfg cfg = {
		.medium_threshold = o[HZ_OPT_MEDIUM_THRESHOLD].set ? o[HZ_OPT_MEDIUM_THRESHOLD].size : 0,
		.nt_threshold = o[HZ_OPT_NT_THRESHOLD].set ? o[HZ_OPT_NT_THRESHOLD].size : 0,
		.use_streaming = o[HZ_OPT_STREAMING].set ? o[HZ_OPT_STREAMING].num : -1,
		.use_clzero = o[HZ_OPT_CLZERO].set ? o[HZ_OPT_CLZERO].num : -1,
		.force = o[HZ_OPT_KERNEL].str,
		.small = o[HZ_OPT_KERNEL_SMALL].str,
		.medium = o[HZ_OPT_KERNEL_MEDIUM].str,
		.large = o[HZ_OPT_KERNEL_LARGE].str,
		.near = o[HZ_OPT_KERNEL_NEAR].str,
	};
	/* The front end: the widest this CPU runs, or the one named. */
	hz_memset_fn front = hz_memset_select();
	if (o[HZ_OPT_FRONT].str) {
		hz_memset_fn fns[8];
		const char *names[8];
		unsigned nf = hz_memset_variants(fns, names, 8), i = 0;
		while (i < nf && strcmp(names[i], o[HZ_OPT_FRONT].str))
			i++;
		if (i < nf)
			front = fns[i];
		else
			hz_log("ignoring HUGEZERO_FRONT: unknown or unsupported on this CPU: ",
			       o[HZ_OPT_FRONT].str, "");
	}
	__atomic_store_n(&hz_memset_impl, front, __ATOMIC_RELAXED);
	__atomic_store_n(&hz_memset_widest_ok, front == hz_memset_widest_raw, __ATOMIC_RELAXED);

	struct hz_policy pol;
	if (hz_policy_build(&pol, &hz_cpu, &cfg))
		hz_log("ignoring a kernel name that is unknown or unsupported on this CPU", "", "");
	/* One store of the whole policy; memset calls on other threads (there
	 * are none yet in practice) see either policy, both correct. */
	hz_policy = pol;

	if (o[HZ_OPT_VERBOSE].set && o[HZ_OPT_VERBOSE].num)
		print_policy();
}

__attribute__((constructor(101))) static void hz_constructor(void)
{
	hz_init();
}

HZ_EXPORT const char *hz_kernel_for(int c, size_t n)
{
	if (n <= HZ_SMALL_MAX)
		return "front";
	return hz_kernels[hz_policy_pick(&hz_policy, c, n)].name;
}
