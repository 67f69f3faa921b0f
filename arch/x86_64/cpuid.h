/* x86-64 CPU identification shared by cpu.c and the front-end selector.
 * Everything here is static inline and touches no global data. */
#ifndef HZ_X86_CPUID_H
#define HZ_X86_CPUID_H

#include <stdint.h>

struct hz_cpuid {
	uint32_t a, b, c, d;
};

static inline struct hz_cpuid hz_cpuid(uint32_t leaf, uint32_t sub)
{
	struct hz_cpuid r;
	__asm__ volatile("cpuid" : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d) : "a"(leaf), "c"(sub));
	return r;
}

enum {
	HZ_X86_ERMS = 1u << 0,
	HZ_X86_FSRM = 1u << 1,
	HZ_X86_AVX2 = 1u << 2,
	HZ_X86_AVX512F = 1u << 3,
	HZ_X86_AVX512BW = 1u << 4, /* with AVX512VL, as every CPU that has BW has */
	HZ_X86_CLZERO = 1u << 5,
	HZ_X86_AMD = 1u << 6,
	HZ_X86_BMI2 = 1u << 7,
};

/* The features detected at initialisation (arch/x86_64/kernels.c). */
#pragma GCC visibility push(hidden)
extern uint32_t hz_x86_feat;
#pragma GCC visibility pop

/* Feature bits, with AVX state checked against what the OS saves (XCR0). */
static inline uint32_t hz_x86_features(void)
{
	uint32_t f = 0;
	struct hz_cpuid v = hz_cpuid(0, 0);
	uint32_t max = v.a;
	/* "AuthenticAMD" */
	if (v.b == 0x68747541 && v.d == 0x69746e65 && v.c == 0x444d4163)
		f |= HZ_X86_AMD;
	struct hz_cpuid l1 = hz_cpuid(1, 0);
	uint64_t xcr0 = 0;
	if (l1.c & (1u << 27)) { /* OSXSAVE */
		uint32_t lo, hi;
		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		xcr0 = ((uint64_t)hi << 32) | lo;
	}
	int ymm = (xcr0 & 0x6) == 0x6;
	int zmm = ymm && (xcr0 & 0xe0) == 0xe0;
	if (max >= 7) {
		struct hz_cpuid l7 = hz_cpuid(7, 0);
		if (l7.b & (1u << 9))
			f |= HZ_X86_ERMS;
		if (l7.d & (1u << 4))
			f |= HZ_X86_FSRM;
		if (l7.b & (1u << 8))
			f |= HZ_X86_BMI2;
		if (ymm && (l7.b & (1u << 5)))
			f |= HZ_X86_AVX2;
		if (zmm && (l7.b & (1u << 16)))
			f |= HZ_X86_AVX512F;
		if (zmm && (l7.b & (1u << 16)) && (l7.b & (1u << 30)) && (l7.b & (1u << 31)))
			f |= HZ_X86_AVX512BW;
	}
	if (hz_cpuid(0x80000000u, 0).a >= 0x80000008u &&
	    (hz_cpuid(0x80000008u, 0).b & 1u))
		f |= HZ_X86_CLZERO;
	return f;
}

#endif
