/* aarch64 small-size memset front end: the template with 16-byte (NEON)
 * vectors, which every aarch64 CPU has. */
#include "../arch.h"

#define HZ_VW 16
#define HZ_FRONT hz_memset_neon
#include "../memset_small.h"

hz_memset_fn hz_memset_select(void)
{
	return hz_memset_neon;
}

unsigned hz_memset_variants(hz_memset_fn *fns, const char **names, unsigned max)
{
	if (!max)
		return 0;
	fns[0] = hz_memset_neon;
	names[0] = "front_neon";
	return 1;
}
