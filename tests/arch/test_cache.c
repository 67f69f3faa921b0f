/* CPU and cache detection, its fallbacks, and the policy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../arch/arch.h"

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void fake_index(const char *root, int i, const char *level, const char *type,
		       const char *size)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/index%d", root, i);
	mkdir(dir, 0700);
	write_file(dir, "level", level);
	write_file(dir, "type", type);
	write_file(dir, "size", size);
}

Test(cache, sysfs_parse)
{
	char root[] = "/tmp/hz-sysfs-XXXXXX";
	cr_assert_not_null(mkdtemp(root));
	fake_index(root, 0, "1\n", "Data\n", "48K\n");
	fake_index(root, 1, "1\n", "Instruction\n", "32K\n");
	fake_index(root, 2, "2\n", "Unified\n", "1024K\n");
	fake_index(root, 3, "3\n", "Unified\n", "32768K\n");
	struct hz_cache_sizes s;
	hz_cache_read_sysfs(root, &s);
	cr_assert_eq(s.size[HZ_CACHE_L1D], 48 << 10);
	cr_assert_eq(s.size[HZ_CACHE_L2], 1 << 20);
	cr_assert_eq(s.size[HZ_CACHE_L3], 32 << 20);
	hz_cache_read_sysfs("/nonexistent/hugezero", &s);
	cr_assert_eq(s.size[HZ_CACHE_L1D] | s.size[HZ_CACHE_L2] | s.size[HZ_CACHE_L3], 0);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

/* This VM's case: the deterministic CPUID leaf says nothing, sysfs knows. */
Test(cache, reconcile_sources)
{
	struct hz_cpu cpu = {0};
	cpu.sysfs.size[HZ_CACHE_L1D] = 48 << 10;
	cpu.sysfs.size[HZ_CACHE_L2] = 1 << 20;
	cpu.sysfs.size[HZ_CACHE_L3] = 0;              /* missing */
	cpu.cpuid.size[HZ_CACHE_L3] = 32 << 20;       /* legacy leaf */
	cpu.cpuid.size[HZ_CACHE_L2] = 1;              /* garbage */
	hz_cache_reconcile(&cpu);
	cr_assert_eq(cpu.cache.size[HZ_CACHE_L1D], 48 << 10);
	cr_assert_str_eq(cpu.source[HZ_CACHE_L1D], "sysfs");
	cr_assert_eq(cpu.cache.size[HZ_CACHE_L2], 1 << 20);
	cr_assert_eq(cpu.cache.size[HZ_CACHE_L3], 32 << 20);
	cr_assert_str_eq(cpu.source[HZ_CACHE_L3], "cpuid");

	/* Nothing plausible anywhere (1-byte caches): sane defaults, never a
	 * threshold of one byte. */
	struct hz_cpu none = {0};
	none.cpuid.size[HZ_CACHE_L2] = 1;
	none.sysfs.size[HZ_CACHE_L3] = (size_t)1 << 50;
	hz_cache_reconcile(&none);
	for (int l = 0; l < HZ_CACHE_LEVELS; l++) {
		cr_assert_str_eq(none.source[l], "default");
		cr_assert_geq(none.cache.size[l], 32 << 10);
	}
}

Test(cache, detected_here)
{
	/* The library's own detection found plausible figures. */
	for (int l = 0; l < HZ_CACHE_LEVELS; l++)
		cr_assert_gt(hz_cpu.cache.size[l], 4096, "level %d", l);
	cr_assert(hz_cpu.cache.size[HZ_CACHE_L1D] <= hz_cpu.cache.size[HZ_CACHE_L2]);
	cr_assert(hz_cpu.cache.size[HZ_CACHE_L2] <= hz_cpu.cache.size[HZ_CACHE_L3]);
}

static struct hz_cpu cpu_with(size_t l2, size_t l3)
{
	struct hz_cpu c = hz_cpu;
	c.cache.size[HZ_CACHE_L2] = l2;
	c.cache.size[HZ_CACHE_L3] = l3;
	c.strings_from = 0; /* the first tier by L2, as on Zen */
	return c;
}

/* A CPU whose string stores win from a size on (Intel's fast strings):
 * the first tier ends there whatever the L2; a configured threshold
 * still wins. */
Test(policy, strings_from)
{
	struct hz_policy p;
	struct hz_policy_cfg cfg = {.use_streaming = -1, .use_clzero = -1};
	struct hz_cpu c = cpu_with(2 << 20, 64 << 20);
	c.strings_from = HZ_FRONT_MAX;
	cr_assert_eq(hz_policy_build(&p, &c, &cfg), 0);
	cr_assert_eq(p.upto[0], HZ_FRONT_MAX);
	cr_assert_eq(p.upto[1], 64 << 20);
	cfg.medium_threshold = 1 << 20;
	cr_assert_eq(hz_policy_build(&p, &c, &cfg), 0);
	cr_assert_eq(p.upto[0], 1 << 20);
}

Test(policy, thresholds_follow_caches)
{
	struct hz_policy a, b;
	struct hz_policy_cfg cfg = {.use_streaming = -1, .use_clzero = -1};
	struct hz_cpu small = cpu_with(512 << 10, 8 << 20), big = cpu_with(2 << 20, 64 << 20);
	cr_assert_eq(hz_policy_build(&a, &small, &cfg), 0);
	cr_assert_eq(hz_policy_build(&b, &big, &cfg), 0);
	cr_assert_lt(a.upto[0], b.upto[0]);
	cr_assert_lt(a.upto[1], b.upto[1]);
	cr_assert_leq(a.upto[0], a.upto[1]);
	cr_assert_eq(a.upto[2], SIZE_MAX);
	cr_assert_eq(hz_policy_pick(&a, 1, a.upto[0] - 1), a.fill[0]);
	cr_assert_eq(hz_policy_pick(&a, 1, a.upto[0]), a.fill[1]);
	cr_assert_eq(hz_policy_pick(&a, 0, a.upto[1]), a.zero[2]);
	cr_assert_eq(hz_policy_pick(&a, 1, SIZE_MAX), a.fill[2]);
	/* Non-zero fills never get a zero-only kernel; the neighbourhood of
	 * a hinted clear never gets a streaming one. */
	for (int t = 0; t < HZ_TIERS; t++)
		cr_assert_not(hz_kernels[a.fill[t]].flags & HZ_K_ZERO_ONLY);
	cr_assert_not(hz_kernels[a.near].flags & HZ_K_STREAMING);
	for (int t = 0; t < 2; t++) {
		cr_assert_not(hz_kernels[a.fill[t]].flags & HZ_K_STREAMING);
		cr_assert_not(hz_kernels[a.zero[t]].flags & HZ_K_STREAMING);
	}
}

Test(policy, overrides)
{
	struct hz_policy p;
	struct hz_policy_cfg cfg = {.use_streaming = 0, .use_clzero = 0,
				    .medium_threshold = 4096, .nt_threshold = 1 << 20};
	cr_assert_eq(hz_policy_build(&p, &hz_cpu, &cfg), 0);
	cr_assert_eq(p.upto[0], 4096);
	cr_assert_eq(p.upto[1], 1 << 20);
	for (int t = 0; t < HZ_TIERS; t++) {
		cr_assert_not(hz_kernels[p.fill[t]].flags & HZ_K_STREAMING, "tier %d", t);
		cr_assert_not(hz_kernels[p.zero[t]].flags & (HZ_K_STREAMING | HZ_K_ZERO_ONLY));
	}
	/* A forced kernel serves every tier; bad names are counted, ignored. */
	struct hz_policy_cfg f = {.use_streaming = -1, .use_clzero = -1, .force = "c",
				  .large = "no_such_kernel"};
	cr_assert_eq(hz_policy_build(&p, &hz_cpu, &f), 1);
	for (int t = 0; t < HZ_TIERS; t++) {
		cr_assert_eq(p.fill[t], 0);
		cr_assert_eq(p.zero[t], 0);
	}
	/* The neighbourhood of a hinted clear may be named, but never a
	 * streaming kernel: its point is to stay in cache. */
	struct hz_policy_cfg n = {.use_streaming = -1, .use_clzero = -1, .near = "c"};
	cr_assert_eq(hz_policy_build(&p, &hz_cpu, &n), 0);
	cr_assert_eq(p.near, 0);
	for (unsigned k = 0; k < hz_nkernels; k++) {
		if (!(hz_kernels[k].flags & HZ_K_STREAMING) || !hz_kernel_usable(k))
			continue;
		n.near = hz_kernels[k].name;
		cr_assert_eq(hz_policy_build(&p, &hz_cpu, &n), 1, "%s accepted", n.near);
		cr_assert_not(hz_kernels[p.near].flags & HZ_K_STREAMING);
	}
	/* Thresholds in the wrong order are repaired, not trusted. */
	struct hz_policy_cfg w = {.use_streaming = -1, .use_clzero = -1,
				  .medium_threshold = 1 << 20, .nt_threshold = 4096};
	hz_policy_build(&p, &hz_cpu, &w);
	cr_assert_geq(p.upto[1], p.upto[0]);
}
