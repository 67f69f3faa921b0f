/* x86-64 CPU detection: vendor, features, and what CPUID says of caches. */
#include <string.h>

#include "../arch.h"
#include "cpuid.h"

/* Sizes from a deterministic cache-parameters leaf (Intel leaf 4, AMD
 * 0x8000001D). Returns 0 if the leaf reported nothing, as it does on some
 * virtual machines. */
static int cache_leaf(uint32_t leaf, struct hz_cache_sizes *out)
{
	int found = 0;
	for (uint32_t i = 0; i < 16; i++) {
		struct hz_cpuid r = hz_cpuid(leaf, i);
		uint32_t type = r.a & 0x1f, level = (r.a >> 5) & 7;
		if (type == 0)
			break;
		size_t size = (size_t)((r.b >> 22) + 1) * (((r.b >> 12) & 0x3ff) + 1) *
			      ((r.b & 0xfff) + 1) * ((size_t)r.c + 1);
		if (level == 1 && type == 1)
			out->size[HZ_CACHE_L1D] = size, found = 1;
		else if (level == 2 && type == 3)
			out->size[HZ_CACHE_L2] = size, found = 1;
		else if (level == 3 && type == 3)
			out->size[HZ_CACHE_L3] = size, found = 1;
	}
	return found;
}

static void cache_cpuid(uint32_t features, struct hz_cache_sizes *out)
{
	uint32_t max = hz_cpuid(0, 0).a;
	uint32_t maxext = hz_cpuid(0x80000000u, 0).a;

	if (!(features & HZ_X86_AMD) && max >= 4 && cache_leaf(4, out))
		return;
	if ((features & HZ_X86_AMD) && maxext >= 0x8000001du &&
	    (hz_cpuid(0x80000001u, 0).c & (1u << 22)) && cache_leaf(0x8000001du, out))
		return;
	/* Legacy AMD leaves: L1d in KiB, L2 in KiB, L3 in 512 KiB units. */
	if (maxext >= 0x80000005u)
		out->size[HZ_CACHE_L1D] = (size_t)(hz_cpuid(0x80000005u, 0).c >> 24) << 10;
	if (maxext >= 0x80000006u) {
		struct hz_cpuid r = hz_cpuid(0x80000006u, 0);
		out->size[HZ_CACHE_L2] = (size_t)(r.c >> 16) << 10;
		out->size[HZ_CACHE_L3] = (size_t)(r.d >> 18) << 19;
	}
}

uint64_t hz_arch_ticks(void)
{
	return __builtin_ia32_rdtsc();
}

void hz_cpu_detect(struct hz_cpu *cpu)
{
	struct hz_cpuid v = hz_cpuid(0, 0);
	memcpy(cpu->vendor + 0, &v.b, 4);
	memcpy(cpu->vendor + 4, &v.d, 4);
	memcpy(cpu->vendor + 8, &v.c, 4);
	cpu->vendor[12] = 0;

	uint32_t f = hz_x86_features();
	hz_x86_feat = f;
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{HZ_X86_ERMS, "erms"},       {HZ_X86_FSRM, "fsrm"},
		{HZ_X86_AVX2, "avx2"},       {HZ_X86_AVX512F, "avx512f"},
		{HZ_X86_AVX512BW, "avx512bw"}, {HZ_X86_BMI2, "bmi2"},
		{HZ_X86_CLZERO, "clzero"},
	};
	size_t at = 0;
	cpu->features[0] = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		size_t len = strlen(names[i].name);
		if (!(f & names[i].bit) || at + len + 2 > sizeof cpu->features)
			continue;
		if (at)
			cpu->features[at++] = ' ';
		memcpy(cpu->features + at, names[i].name, len + 1);
		at += len;
	}
	cache_cpuid(f, &cpu->cpuid);
	cpu->zva_block = 0;
	/* Intel's fast strings (ERMS) beat AVX-512 stores from the front end's
	 * end on, in cache or not: A/B against glibc's memset (which takes rep
	 * stosb from 2 KiB) on a Xeon, 64 KiB to 1 MiB, the vector loop was
	 * 1.03-1.20x slower, rep stosb 0.99-1.03x (README, Kernels). Zen's rep
	 * stosb loses to vector stores while the extent fits in L2. */
	cpu->strings_from = !strcmp(cpu->vendor, "GenuineIntel") && (f & HZ_X86_ERMS) ? HZ_FRONT_MAX : 0;
}
