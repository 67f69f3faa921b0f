/* Every kernel, every front end and the dispatch against the reference. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdio.h>
#include <string.h>

#include "../../arch/arch.h"
#include "../util/fillcheck.h"

/* Targets: the kernel table, the front ends the CPU runs, and memset's
 * own (the selected front end with the library's policy behind it). */
#define MAX_TARGETS (HZ_MAX_KERNELS + 8)

/* The front end the library selects for memset (selected once: it runs
 * CPUID, which is slow in a virtual machine). */
static hz_memset_fn front;

static void *dispatch(void *p, int c, size_t n)
{
	return front(p, c, n);
}

static unsigned targets(fill_fn *fns, const char **names)
{
	unsigned k = 0;
	if (!front)
		front = hz_memset_select();
	for (unsigned i = 0; i < hz_nkernels; i++) {
		fns[k] = hz_kernel_usable(i) ? hz_kernels[i].fill : NULL;
		names[k++] = hz_kernels[i].name;
	}
	k += hz_memset_variants(fns + k, names + k, MAX_TARGETS - k - 1);
	fns[k] = dispatch;
	names[k++] = "dispatch";
	return k;
}

/* Criterion parameters: one test per target index. */
static struct criterion_test_params target_params(void)
{
	static int idx[MAX_TARGETS];
	fill_fn fns[MAX_TARGETS];
	const char *names[MAX_TARGETS];
	unsigned n = targets(fns, names);
	for (unsigned i = 0; i < n; i++)
		idx[i] = (int)i;
	return cr_make_param_array(int, idx, n);
}

ParameterizedTestParameters(kernels, exhaustive)
{
	return target_params();
}

ParameterizedTest(int *t, kernels, exhaustive, .timeout = 300)
{
	fill_fn fns[MAX_TARGETS];
	const char *names[MAX_TARGETS];
	targets(fns, names);
	if (!fns[*t])
		cr_skip_test("%s: not supported by this CPU", names[*t]);
	char err[256];
	int rc = check_exhaustive(fns[*t], err, sizeof err);
	cr_assert_eq(rc, 0, "%s: %s", names[*t], err);
}

ParameterizedTestParameters(kernels, random_up_to_64MiB)
{
	return target_params();
}

ParameterizedTest(int *t, kernels, random_up_to_64MiB, .timeout = 300)
{
	fill_fn fns[MAX_TARGETS];
	const char *names[MAX_TARGETS];
	targets(fns, names);
	if (!fns[*t])
		cr_skip_test("%s: not supported by this CPU", names[*t]);
	char err[256];
	int rc = check_random(fns[*t], 12, (size_t)64 << 20, 1234u + (unsigned)*t, err, sizeof err);
	cr_assert_eq(rc, 0, "%s: %s", names[*t], err);
}

/* Every tier of the policy behind the front end: thresholds just above the
 * front end's limit; every size and offset around each boundary, random
 * sizes across all three tiers. */
Test(kernels, dispatch_tiers, .timeout = 300)
{
	size_t t0 = HZ_FRONT_MAX + 5000, t1 = HZ_FRONT_MAX + 20000;
	hz_policy.upto[0] = t0;
	hz_policy.upto[1] = t1;
	hz_memset_fn f = hz_memset_select();
	char err[256];
	size_t edges[] = {HZ_FRONT_MAX, t0, t1};
	for (int i = 0; i < 3; i++) {
		int rc = check_sizes(f, edges[i] - 128, edges[i] + 128, err, sizeof err);
		cr_assert_eq(rc, 0, "around %zu: %s", edges[i], err);
	}
	int rc = check_random(f, 3000, HZ_FRONT_MAX + 40000, 7, err, sizeof err);
	cr_assert_eq(rc, 0, "%s", err);
}

/* Kernels the table declares unsupported must be the ones /proc/cpuinfo
 * lacks: a skipped kernel test is then a real absence, not a detection
 * failure. Kernels without a CPU flag of their own are not listed. */
Test(kernels, detection_matches_cpuinfo)
{
	static const char *const pairs[][2] = {
		{"rep_stosb", "erms"}, {"avx2", "avx2"}, {"avx512", "avx512f"},
		{"clzero", "clzero"},  {"dc_zva", NULL},
	};
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		cr_skip_test("no /proc/cpuinfo");
	static char line[8192], flags[8192];
	flags[0] = 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "flags", 5)) {
			snprintf(flags, sizeof flags, " %s ", strchr(line, ':') + 1);
			break;
		}
	fclose(f);
	for (char *q = flags; *q; q++)
		if (*q == '\n' || *q == '\t')
			*q = ' ';
	int checked = 0;
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		int k = -1;
		for (unsigned j = 0; j < hz_nkernels; j++)
			if (!strcmp(hz_kernels[j].name, pairs[i][0]))
				k = (int)j;
		if (k < 0 || !pairs[i][1] || !flags[0])
			continue;
		char want[64];
		snprintf(want, sizeof want, " %s ", pairs[i][1]);
		int has = strstr(flags, want) != NULL;
		cr_assert_eq(hz_kernel_usable((unsigned)k), has, "%s: usable %d, cpuinfo flag %s %d",
			     pairs[i][0], hz_kernel_usable((unsigned)k), pairs[i][1], has);
		checked++;
	}
	if (!checked)
		cr_skip_test("no kernel of this architecture has a cpuinfo flag");
}

/* The policy the library runs with: sizes across the real thresholds. */
Test(kernels, dispatch_default_policy_random, .timeout = 300)
{
	char err[256];
	int rc = check_random(hz_memset_select(), 40, (size_t)64 << 20, 99, err, sizeof err);
	cr_assert_eq(rc, 0, "%s", err);
}

Test(kernels, table_is_sane)
{
	cr_assert(hz_cpu.vendor[0], "the library's initialisation did not run");
	cr_assert(hz_nkernels >= 1 && hz_nkernels <= HZ_MAX_KERNELS);
	cr_assert_str_eq(hz_kernels[0].name, "c", "entry 0 must be the portable C kernel");
	cr_assert(hz_kernel_usable(0));
	for (unsigned i = 0; i < hz_nkernels; i++) {
		cr_assert_not_null(hz_kernels[i].fill);
		for (unsigned j = 0; j < i; j++)
			cr_assert_str_neq(hz_kernels[i].name, hz_kernels[j].name);
		if (hz_kernel_usable(i))
			cr_assert_eq(hz_kernel_find(hz_kernels[i].name), (int)i);
	}
	cr_assert_eq(hz_kernel_find("no_such_kernel"), -1);
}
