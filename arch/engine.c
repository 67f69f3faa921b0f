/* The engine's state and its setup: the detected CPU, the front end in
 * use and the policy. Before setup every tier runs the portable C kernel
 * (entry 0) and memset the front end every CPU of the architecture runs:
 * correct everywhere, and nothing is detected lazily. */
#include <string.h>

#include "../os/os.h"
#include "arch.h"

struct hz_cpu hz_cpu;
struct hz_policy hz_policy = {{SIZE_MAX, SIZE_MAX, SIZE_MAX}, {0, 0, 0}, {0, 0, 0}, 0, 0};
int hz_memset_widest_ok;

void *hz_fill_uncounted(void *p, int c, size_t n)
{
	hz_fill(hz_policy_pick(&hz_policy, c, n), p, c, n);
	return p;
}

#define MAX_FRONTS 8

hz_memset_fn hz_memset_front(const char *name)
{
	hz_memset_fn fns[MAX_FRONTS];
	const char *names[MAX_FRONTS];
	unsigned n = hz_memset_variants(fns, names, MAX_FRONTS);
	for (unsigned i = 0; name && i < n; i++)
		if (!strcmp(names[i], name))
			return fns[i];
	return NULL;
}

const char *hz_memset_front_name(hz_memset_fn fn)
{
	hz_memset_fn fns[MAX_FRONTS];
	const char *names[MAX_FRONTS];
	unsigned n = hz_memset_variants(fns, names, MAX_FRONTS);
	for (unsigned i = 0; i < n; i++)
		if (fns[i] == fn)
			return names[i];
	return "other";
}

void hz_memset_divert(hz_memset_fn fn)
{
	__atomic_store_n(&hz_memset_widest_ok, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hz_memset_impl, fn, __ATOMIC_RELAXED);
}

/* The CPU and its caches, once: CPUID traps to the hypervisor in a
 * virtual machine, and sysfs is read with system calls. */
static void detect(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	hz_cpu_detect(&hz_cpu);
	hz_cache_read_sysfs("/sys/devices/system/cpu/cpu0/cache", &hz_cpu.sysfs);
	hz_cache_reconcile(&hz_cpu);
}

int hz_engine_setup(const struct hz_engine_cfg *cfg)
{
	int ignored = 0;
	detect();
	/* The policy reads L2 and L3 only. */
	const size_t given[HZ_CACHE_LEVELS] = {0, cfg->l2_size, cfg->l3_size};
	for (int l = HZ_CACHE_L2; l < HZ_CACHE_LEVELS; l++)
		if (given[l])
			hz_cpu.cache.size[l] = given[l], hz_cpu.source[l] = "configured";

	hz_memset_fn front = hz_memset_select();
	if (cfg->front) {
		hz_memset_fn named = hz_memset_front(cfg->front);
		if (named)
			front = named;
		else
			ignored |= HZ_ENGINE_BAD_FRONT;
	}
	__atomic_store_n(&hz_memset_impl, front, __ATOMIC_RELAXED);
	__atomic_store_n(&hz_memset_widest_ok, front == hz_memset_widest_raw, __ATOMIC_RELAXED);

	struct hz_policy pol;
	if (hz_policy_build(&pol, &hz_cpu, &cfg->policy))
		ignored |= HZ_ENGINE_BAD_KERNEL;
	hz_policy = pol;
	return ignored;
}
