/* x86-64 clearing kernels and their table. Compiled with -fno-builtin
 * -fno-tree-loop-distribute-patterns. */
#include <immintrin.h>

#include "../arch.h"
#include "cpuid.h"

/* Set once by hz_cpu_detect: CPUID traps to the hypervisor in a virtual
 * machine, so it is never executed per query. Zero before detection, when
 * only the portable kernel is used. */
uint32_t hz_x86_feat;

static int has(uint32_t bit)
{
	return (hz_x86_feat & bit) != 0;
}
static int has_erms(void) { return has(HZ_X86_ERMS); }
static int has_avx2(void) { return has(HZ_X86_AVX2); }
static int has_avx512(void) { return has(HZ_X86_AVX512F); }
static int has_clzero(void) { return has(HZ_X86_CLZERO); }

/* rep stosb: rdi = destination, rcx = count, al = byte. Fast strings
 * (ERMS/FSRM) let the CPU see the whole extent and skip reading lines. */
static void *fill_stosb(void *d, int c, size_t n)
{
	void *p = d;
	__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(c) : "memory");
	return d;
}

/* rep stosq over the 8-byte words, rep stosb over the remaining bytes:
 * rdi = destination, rcx = count, rax = pattern. */
static void *fill_stosq(void *d, int c, size_t n)
{
	void *p = d;
	size_t q = n >> 3, r = n & 7;
	uint64_t w = (unsigned char)c * 0x0101010101010101ull;
	__asm__ volatile("rep stosq" : "+D"(p), "+c"(q) : "a"(w) : "memory");
	__asm__ volatile("rep stosb" : "+D"(p), "+c"(r) : "a"(w) : "memory");
	return d;
}

/* The SSE2 front end (front.c): vector stores for edges under 64 bytes. */
void *hz_memset_sse2(void *p, int c, size_t n);

/* CLZERO zeroes the whole 64-byte line addressed by rax without reading
 * it; the unaligned head and tail take 16-byte vector stores. Weakly
 * ordered like streaming stores, hence the sfence. Non-zero fills go to
 * rep stosb: the policy only uses CLZERO for zero. */
static void *fill_clzero(void *d, int c, size_t n)
{
	unsigned char *p = d, *end = p + n;
	if ((unsigned char)c != 0 || n < 128)
		return (unsigned char)c ? fill_stosb(d, c, n) : hz_memset_sse2(d, 0, n);
	unsigned char *a = (unsigned char *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
	unsigned char *z = (unsigned char *)((uintptr_t)end & ~(uintptr_t)63);
	hz_memset_sse2(p, 0, (size_t)(a - p));
	for (; a + 256 <= z; a += 256) {
		__asm__ volatile("clzero" ::"a"(a) : "memory");
		__asm__ volatile("clzero" ::"a"(a + 64) : "memory");
		__asm__ volatile("clzero" ::"a"(a + 128) : "memory");
		__asm__ volatile("clzero" ::"a"(a + 192) : "memory");
	}
	for (; a < z; a += 64)
		__asm__ volatile("clzero" ::"a"(a) : "memory");
	__asm__ volatile("sfence" ::: "memory");
	hz_memset_sse2(z, 0, (size_t)(end - z));
	return d;
}

#pragma GCC push_options
#pragma GCC target("avx2")
#define HZ_KV __m256i
#define HZ_KVW 32
#define HZ_KSET1 _mm256_set1_epi8
#define HZ_KSTOREU(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define HZ_KSTORE_T(p, v) _mm256_store_si256((__m256i *)(p), v)
#define HZ_KSTORE_NT(p, v) _mm256_stream_si256((__m256i *)(p), v)
#define HZ_KNAME fill_avx2
#include "kernels_vec.h"
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")
#define HZ_KV __m512i
#define HZ_KVW 64
#define HZ_KSET1 _mm512_set1_epi8
#define HZ_KSTOREU(p, v) _mm512_storeu_si512((void *)(p), v)
#define HZ_KSTORE_T(p, v) _mm512_store_si512((void *)(p), v)
#define HZ_KSTORE_NT(p, v) _mm512_stream_si512((void *)(p), v)
#define HZ_KNAME fill_avx512
#include "kernels_vec.h"
#pragma GCC pop_options

/* Ordered by preference: within a tier the policy takes the last entry
 * the CPU supports (arch.h). */
const struct hz_kernel hz_kernels[] = {
	{"c", NULL, hz_fill_c, HZ_K_TIER0 | HZ_K_TIER1 | HZ_K_TIER2},
	{"rep_stosq", NULL, fill_stosq, HZ_K_TIER1 | HZ_K_TIER2},
	{"rep_stosb", has_erms, fill_stosb, HZ_K_TIER1 | HZ_K_TIER2},
	{"avx2", has_avx2, fill_avx2_t, HZ_K_TIER0},
	{"avx2_nt", has_avx2, fill_avx2_nt, HZ_K_STREAMING | HZ_K_TIER2},
	{"avx512", has_avx512, fill_avx512_t, HZ_K_TIER0},
	{"avx512_nt", has_avx512, fill_avx512_nt, HZ_K_STREAMING | HZ_K_TIER2},
	{"clzero", has_clzero, fill_clzero, HZ_K_STREAMING | HZ_K_ZERO_ONLY | HZ_K_TIER2},
};
const unsigned hz_nkernels = sizeof hz_kernels / sizeof hz_kernels[0];
