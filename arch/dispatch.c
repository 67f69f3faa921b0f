/* Dispatch above the small front end, and the library's own memset. */
#include "arch.h"

/* Before initialisation every tier runs the portable C kernel (entry 0):
 * correct on every CPU, and nothing is detected lazily. */
struct hz_policy hz_policy = {{SIZE_MAX, SIZE_MAX, SIZE_MAX}, {0, 0, 0}, {0, 0, 0}, 0};
struct hz_counters_raw hz_counters_raw;

void hz_fill_with(unsigned k, void *p, int c, size_t n)
{
	if (n >= HZ_COUNT_MIN) {
		__atomic_fetch_add(&hz_counters_raw.calls[k], 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&hz_counters_raw.bytes[k], n, __ATOMIC_RELAXED);
	}
	hz_kernels[k].fill(p, c, n);
}

int hz_memset_widest_ok;

void *hz_memset_exit(void *p, int c, size_t n)
{
	if (hz_unlikely(!__atomic_load_n(&hz_memset_widest_ok, __ATOMIC_RELAXED)))
		return hz_memset_impl(p, c, n);
	return hz_memset_large(p, c, n);
}

void *hz_memset_large(void *p, int c, size_t n)
{
	__atomic_fetch_add(&hz_counters_raw.memset_large_calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&hz_counters_raw.memset_large_bytes, n, __ATOMIC_RELAXED);
	hz_fill_with(hz_policy_pick(&hz_policy, c, n), p, c, n);
	return p;
}
