/* x86-64 small-size memset front ends: the same template at three vector
 * widths (the widest in widest.h, which preload/memset.c also builds as
 * memset itself), and the selector. Compiled with
 * -fno-builtin -fno-tree-loop-distribute-patterns. */
#include "../arch.h"
#include "cpuid.h"

#define HZ_VW 16
#define HZ_FRONT hz_memset_sse2
#include "../memset_small.h"

#pragma GCC push_options
#pragma GCC target("avx2")
#define HZ_VW 32
#define HZ_FRONT hz_memset_avx2
#include "../memset_small.h"
#pragma GCC pop_options

#include "widest.h"
#define HZ_FRONT hz_memset_avx512
#include "../memset_small.h"
#pragma GCC pop_options

/* SSE2 is part of x86-64: correct on every CPU before detection. */
hz_memset_fn hz_memset_impl = hz_memset_sse2;

void *hz_memset_widest_raw(void *p, int c, size_t n) __attribute__((alias("hz_memset_avx512")));

hz_memset_fn hz_memset_select(void)
{
	uint32_t f = hz_x86_features();
	if ((f & HZ_X86_AVX512BW) && (f & HZ_X86_BMI2))
		return hz_memset_avx512;
	if (f & HZ_X86_AVX2)
		return hz_memset_avx2;
	return hz_memset_sse2;
}

unsigned hz_memset_variants(hz_memset_fn *fns, const char **names, unsigned max)
{
	uint32_t f = hz_x86_feat;
	unsigned k = 0;
	if (k < max && (f & HZ_X86_AVX512BW) && (f & HZ_X86_BMI2))
		fns[k] = hz_memset_avx512, names[k++] = "front_avx512";
	if (k < max && (f & HZ_X86_AVX2))
		fns[k] = hz_memset_avx2, names[k++] = "front_avx2";
	if (k < max)
		fns[k] = hz_memset_sse2, names[k++] = "front_sse2";
	return k;
}
