/* DC ZVA block size from DCZID_EL0: bits 3:0 are log2 of the block in
 * 4-byte words; bit 4 (DZP) set means DC ZVA is prohibited (returns 0). */
#ifndef HZ_AARCH64_ZVA_H
#define HZ_AARCH64_ZVA_H
#include <stddef.h>
#include <stdint.h>

static inline size_t hz_zva_decode(uint64_t dczid)
{
	if (dczid & 0x10)
		return 0;
	return (size_t)4 << (dczid & 0xf);
}

static inline uint64_t hz_read_dczid(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, dczid_el0" : "=r"(v));
	return v;
}

/* Set by hz_cpu_detect; 0 until then or when prohibited. */
#pragma GCC visibility push(hidden)
extern size_t hz_zva_block;
#pragma GCC visibility pop
#endif
