/* The widest small-size front end of x86-64, for the memset_small.h
 * template: AVX-512BW with a masked store below 64 bytes (and VL for the
 * 16- and 32-byte stores near a page's end, in zmm16-31's lower halves). The includer
 * names the function (HZ_FRONT), includes the template, then restores the
 * target with "#pragma GCC pop_options". */
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,bmi2")
#include <immintrin.h>
/* Masked stores do not touch (or fault on) the bytes whose mask bit is
 * clear; bzhi builds the mask of the low n bits. */
#define HZ_MASKED_FILL(p, b, n) \
	_mm512_mask_storeu_epi8((p), _bzhi_u64(~0ull, (unsigned)(n)), _mm512_set1_epi8((char)(b)))
#define HZ_VW 64
