/* aarch64 clearing kernels and their table. Compiled with -fno-builtin
 * -fno-tree-loop-distribute-patterns. */
#include "../arch.h"
#include "zva.h"

static int has_zva(void)
{
	return hz_zva_block != 0;
}

/* DC ZVA zeroes one naturally aligned block (hz_zva_block bytes) without
 * reading it; the unaligned head and tail are filled by the C kernel.
 * Non-zero fills and extents under two blocks go to the C kernel. */
static void *fill_zva(void *d, int c, size_t n)
{
	size_t bs = hz_zva_block;
	unsigned char *p = d, *end = p + n;
	if ((unsigned char)c != 0 || bs == 0 || n < 2 * bs)
		return hz_fill_c(d, c, n);
	unsigned char *a = (unsigned char *)(((uintptr_t)p + bs - 1) & ~(uintptr_t)(bs - 1));
	unsigned char *z = (unsigned char *)((uintptr_t)end & ~(uintptr_t)(bs - 1));
	hz_fill_c(p, 0, (size_t)(a - p));
	for (; a < z; a += bs)
		__asm__ volatile("dc zva, %0" : : "r"(a) : "memory");
	hz_fill_c(z, 0, (size_t)(end - z));
	return d;
}

/* STNP of a q-register pair: 32 bytes a store, a hint not to allocate in
 * cache. Register use: q0 = the byte replicated, %0 = destination. Aligned
 * 64-byte body; C kernel for the head and tail. A dmb ishst orders the
 * non-temporal stores before the caller's later stores. */
static void *fill_stnp(void *d, int c, size_t n)
{
	unsigned char *p = d, *end = p + n;
	if (n < 128)
		return hz_fill_c(d, c, n);
	unsigned char *a = (unsigned char *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
	unsigned char *z = (unsigned char *)((uintptr_t)end & ~(uintptr_t)63);
	hz_fill_c(p, c, (size_t)(a - p));
	for (; a < z; a += 64)
		__asm__ volatile("dup v0.16b, %w1\n\t"
				 "stnp q0, q0, [%0]\n\t"
				 "stnp q0, q0, [%0, #32]"
				 : : "r"(a), "r"(c) : "v0", "memory");
	__asm__ volatile("dmb ishst" ::: "memory");
	hz_fill_c(z, c, (size_t)(end - z));
	return d;
}

/* STP of a q-register pair: 32 bytes a store, cache-allocating. Register
 * use: v0 = the byte replicated, %0 = destination. Unaligned 64-byte
 * body from the start, the last 64 bytes stored from the end (they may
 * overlap the body); extents under 64 bytes go to the C kernel. */
static void *fill_stp(void *d, int c, size_t n)
{
	unsigned char *p = d, *end = p + n;
	if (n < 64)
		return hz_fill_c(d, c, n);
	for (; p + 64 <= end; p += 64)
		__asm__ volatile("dup v0.16b, %w1\n\t"
				 "stp q0, q0, [%0]\n\t"
				 "stp q0, q0, [%0, #32]"
				 : : "r"(p), "r"(c) : "v0", "memory");
	__asm__ volatile("dup v0.16b, %w1\n\t"
			 "stp q0, q0, [%0]\n\t"
			 "stp q0, q0, [%0, #32]"
			 : : "r"(end - 64), "r"(c) : "v0", "memory");
	return d;
}

/* Ordered by preference: within a tier the policy takes the last entry
 * the CPU supports (arch.h). */
const struct hz_kernel hz_kernels[] = {
	{"c", NULL, hz_fill_c, HZ_K_TIER0 | HZ_K_TIER1 | HZ_K_TIER2},
	{"stp", NULL, fill_stp, HZ_K_TIER0 | HZ_K_TIER1},
	{"stnp", NULL, fill_stnp, HZ_K_STREAMING | HZ_K_TIER2},
	{"dc_zva", has_zva, fill_zva, HZ_K_ZERO_ONLY | HZ_K_TIER0 | HZ_K_TIER1 | HZ_K_TIER2},
};
const unsigned hz_nkernels = sizeof hz_kernels / sizeof hz_kernels[0];
