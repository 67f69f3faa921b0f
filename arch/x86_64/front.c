/* x86-64 small-size memset front ends: the same template at three vector
 * widths, and the selector an IFUNC resolver calls. Compiled with
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

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,bmi2")
#include <immintrin.h>
/* Masked stores do not touch (or fault on) the bytes whose mask bit is
 * clear; bzhi builds the mask of the low n bits. */
#define HZ_MASKED_FILL(p, b, n) \
	_mm512_mask_storeu_epi8((p), _bzhi_u64(~0ull, (unsigned)(n)), _mm512_set1_epi8((char)(b)))
#define HZ_VW 64
#define HZ_FRONT hz_memset_avx512
#include "../memset_small.h"
#pragma GCC pop_options

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
