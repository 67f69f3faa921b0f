/* Every kernel, every front end and the dispatch against the reference. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "../arch/arch.h"
#include "fillcheck.h"

/* Targets: the kernel table, the front ends the CPU runs, and memset's
 * own (the selected front end with the library's policy behind it). */
#define MAX_TARGETS (HZ_MAX_KERNELS + 8)

/* The front end memset's IFUNC resolver selects (selected once: it runs
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
 * front end's limit, random sizes across all three. */
Test(kernels, dispatch_tiers, .timeout = 120)
{
	hz_policy.upto[0] = HZ_SMALL_MAX + 5000;
	hz_policy.upto[1] = HZ_SMALL_MAX + 20000;
	char err[256];
	int rc = check_random(hz_memset_select(), 3000, HZ_SMALL_MAX + 40000, 7, err, sizeof err);
	cr_assert_eq(rc, 0, "%s", err);
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
