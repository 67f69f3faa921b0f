/* aarch64 small-size memset front end: the template with 16-byte (NEON)
 * vectors, which every aarch64 CPU has. */
#include "../arch.h"

#include "widest.h"
#define HZ_FRONT hz_memset_neon
#include "../memset_small.h"
#pragma GCC pop_options

hz_memset_fn hz_memset_impl = hz_memset_neon;

void *hz_memset_widest_raw(void *p, int c, size_t n) __attribute__((alias("hz_memset_neon")));

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
