/* aarch64 CPU detection: the DC ZVA block. Cache sizes come from sysfs
 * (arch/cache.c); the CPU's own cache ID registers are not readable at EL0. */
#include <string.h>

#include "../arch.h"
#include "zva.h"

size_t hz_zva_block;

uint64_t hz_arch_ticks(void)
{
	uint64_t t;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(t));
	return t;
}

void hz_cpu_detect(struct hz_cpu *cpu)
{
	strcpy(cpu->vendor, "arm64");
	cpu->cpuid = (struct hz_cache_sizes){{0}};
	size_t zva = hz_zva_decode(hz_read_dczid());
	/* Blocks outside 16 B..2 KiB would break the kernel's assumptions. */
	if (zva < 16 || zva > 2048)
		zva = 0;
	hz_zva_block = zva;
	cpu->zva_block = zva;
	strcpy(cpu->features, zva ? "dc_zva" : "");
}
