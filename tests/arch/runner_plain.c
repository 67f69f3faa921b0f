/* The kernel checks without Criterion, for architectures whose tests run
 * under qemu-user: every kernel, the front end and the dispatch. Prints
 * "N passed, N failed". */
#include <stdio.h>
#include <string.h>

#include "../../arch/arch.h"
#include "../util/fillcheck.h"

static unsigned pass, fail;

static void run(const char *name, fill_fn f)
{
	char err[256];
	int rc = check_exhaustive(f, err, sizeof err);
	if (!rc)
		rc = check_random(f, 6, (size_t)8 << 20, 5, err, sizeof err);
	printf("%s - %s%s%s\n", rc ? "FAIL" : "ok  ", name, rc ? ": " : "", rc ? err : "");
	rc ? fail++ : pass++;
}

int main(void)
{
	printf("cpu %s [%s], zva block %zu\n", hz_cpu.vendor, hz_cpu.features, hz_cpu.zva_block);
	for (unsigned k = 0; k < hz_nkernels; k++) {
		if (hz_kernel_usable(k))
			run(hz_kernels[k].name, hz_kernels[k].fill);
		else
			printf("skip - %s: not supported\n", hz_kernels[k].name);
	}
	hz_memset_fn fns[4];
	const char *names[4];
	unsigned n = hz_memset_variants(fns, names, 4);
	for (unsigned i = 0; i < n; i++)
		run(names[i], fns[i]);
	run("dispatch", hz_memset_select());
	/* Every tier behind the front end, at random sizes across them. */
	hz_policy.upto[0] = HZ_FRONT_MAX + 5000;
	hz_policy.upto[1] = HZ_FRONT_MAX + 20000;
	char err[256];
	int rc = check_random(hz_memset_select(), 3000, HZ_FRONT_MAX + 40000, 7, err, sizeof err);
	printf("%s - dispatch tiers%s%s\n", rc ? "FAIL" : "ok  ", rc ? ": " : "", rc ? err : "");
	rc ? fail++ : pass++;
	printf("%u passed, %u failed\n", pass, fail);
	return fail != 0;
}
