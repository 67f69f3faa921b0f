/* The size-to-kernel policy: three tiers above the small front end.
 * Tier 0: vector stores (call overhead matters); tier 1: the extent fits in
 * cache, temporal stores; tier 2: it does not, streaming stores or a
 * zero-only line-clearing instruction. The thresholds derive from the
 * cache sizes; the defaults were chosen by bench/memset_bench (README). */
#include <string.h>

#include "arch.h"

int hz_kernel_usable(unsigned k)
{
	return k < hz_nkernels && (!hz_kernels[k].supported || hz_kernels[k].supported());
}

int hz_kernel_find(const char *name)
{
	for (unsigned k = 0; name && k < hz_nkernels; k++)
		if (!strcmp(hz_kernels[k].name, name) && hz_kernel_usable(k))
			return (int)k;
	return -1;
}

/* The last usable candidate of a tier; zero selects zero-only kernels too,
 * temporal excludes streaming ones. */
static unsigned best(unsigned tier_flag, int zero, int temporal, int allow_zero_only)
{
	unsigned pick = 0;
	for (unsigned k = 0; k < hz_nkernels; k++) {
		unsigned f = hz_kernels[k].flags;
		if (!(f & tier_flag) || !hz_kernel_usable(k))
			continue;
		if ((f & HZ_K_ZERO_ONLY) && (!zero || !allow_zero_only))
			continue;
		if (temporal && (f & HZ_K_STREAMING))
			continue;
		pick = k;
	}
	return pick;
}

/* Applies a kernel named by configuration to tier t; counts bad names. */
static void override(struct hz_policy *pol, int t, const char *name, int *bad)
{
	if (!name || !*name)
		return;
	int k = hz_kernel_find(name);
	if (k < 0) {
		(*bad)++;
		return;
	}
	pol->fill[t] = (uint8_t)k;
	pol->zero[t] = (uint8_t)k;
}

int hz_policy_build(struct hz_policy *pol, const struct hz_cpu *cpu,
		    const struct hz_policy_cfg *cfg)
{
	int bad = 0;
	size_t l2 = cpu->cache.size[HZ_CACHE_L2], l3 = cpu->cache.size[HZ_CACHE_L3];
	int clz = cfg->use_clzero != 0;
	int stream = cfg->use_streaming != 0;

	/* Measured on Zen 5 (README): vector stores beat rep stosb while the
	 * extent fits in L2 (by 1.5x at 512 KiB), rep stosb wins from there
	 * while it fits in L3, streaming stores win once it does not (rep
	 * stosb is 20% faster at 24 MiB, 10% slower at 32 MiB). A CPU whose
	 * string stores win earlier says so (strings_from: Intel's). */
	pol->upto[0] = cfg->medium_threshold ? cfg->medium_threshold
		     : cpu->strings_from ? cpu->strings_from : l2;
	pol->upto[1] = cfg->nt_threshold ? cfg->nt_threshold : l3;
	pol->upto[2] = SIZE_MAX;
	if (pol->upto[1] < pol->upto[0])
		pol->upto[1] = pol->upto[0];

	for (int t = 0; t < HZ_TIERS; t++) {
		unsigned flag = HZ_K_TIER0 << t;
		int temporal = t < 2 || !stream;
		if (t == 2 && !stream)
			flag = HZ_K_TIER1;
		pol->fill[t] = (uint8_t)best(flag, 0, temporal, clz);
		pol->zero[t] = (uint8_t)best(flag, 1, temporal, clz);
	}
	/* The hint's neighbourhood is at most 5 pages: vector stores, which
	 * beat string stores at that size and leave the lines in cache. */
	pol->near = (uint8_t)best(HZ_K_TIER0, 1, 1, clz);

	if (cfg->near && *cfg->near) {
		int k = hz_kernel_find(cfg->near);
		if (k < 0 || (hz_kernels[k].flags & HZ_K_STREAMING))
			bad++; /* the neighbourhood must stay in cache */
		else
			pol->near = (uint8_t)k;
	}
	override(pol, 0, cfg->small, &bad);
	override(pol, 1, cfg->medium, &bad);
	override(pol, 2, cfg->large, &bad);
	for (int t = 0; t < HZ_TIERS; t++)
		override(pol, t, cfg->force, &bad);
	/* Large fills learn between tiers 1 and 2 (learn.c) unless the
	 * configuration chose: a threshold, a kernel, no streaming. */
	pol->learn = cfg->learn && !hz_learn_stopped() && !cfg->nt_threshold && !(cfg->force && *cfg->force) &&
		     !(cfg->small && *cfg->small) && !(cfg->medium && *cfg->medium) && !(cfg->large && *cfg->large) &&
		     stream && pol->upto[0] <= HZ_LEARN_MIN && pol->fill[1] != pol->fill[2] && hz_arch_ticks() != 0;
	return bad;
}
