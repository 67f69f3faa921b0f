/* aarch64: DCZID_EL0 decoding, including the prohibit bit that qemu's CPUs
 * never set, and the block this CPU reports. Prints "N passed, N failed". */
#include <stdio.h>

#include "../../arch/arch.h"
#include "../../arch/aarch64/zva.h"

int main(void)
{
	static const struct {
		uint64_t dczid;
		size_t block;
	} cases[] = {
		{0x4, 64}, {0x7, 512}, {0x2, 16}, {0x14, 0}, {0x17, 0}, {0x9, 2048},
	};
	unsigned pass = 0, fail = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t got = hz_zva_decode(cases[i].dczid);
		if (got == cases[i].block)
			pass++;
		else
			fail++, printf("FAIL - dczid %#llx: %zu, want %zu\n",
				       (unsigned long long)cases[i].dczid, got, cases[i].block);
	}
	uint64_t here = hz_read_dczid();
	printf("this CPU: dczid %#llx, block %zu, library uses %zu\n", (unsigned long long)here,
	       hz_zva_decode(here), hz_zva_block);
	if (hz_zva_block == hz_zva_decode(here))
		pass++;
	else
		fail++, printf("FAIL - library's block differs from the register\n");
	printf("%u passed, %u failed\n", pass, fail);
	return fail != 0;
}
