/* The streaming tier's boundary, learnt (arch/learn.c): every arm tried
 * first, in runs; a sample only after a few fills of the same arm in a
 * row; the cheaper arm taken, the cached one kept unless another costs a
 * fifth less; one slow sample (a stall) never decides; another tried now
 * and then, the cold fills back from it no samples; half-octave classes
 * and the ways (alone, split) apart; zero fills with a zero-only kernel
 * get a third arm; a fill runs the arm's kernel and writes every byte. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../arch/arch.h"

#define MiB ((size_t)1 << 20)
#define EXPLORE_CALLS 512 /* learn.c's EXPLORE */

/* A policy whose tiers 1 and 2 are distinct kernels (the first two of the
 * table after the portable one, or the portable one twice on a table of
 * one), learning; the table cleared. */
static void setup(void)
{
	memset(hz_learn, 0, sizeof hz_learn);
	hz_policy = (struct hz_policy){{16384, SIZE_MAX, SIZE_MAX}, {0, 0, 1}, {0, 0, 1}, 0, 1};
	if (hz_nkernels < 2)
		cr_skip_test("one kernel only");
}

/* n fills of the class of size, arm as hz_learn_arm says, costing
 * cost[arm] ticks per KiB; returns how many took arm 1. */
static int run(int c, size_t size, int n, const uint64_t *cost)
{
	int ones = 0;
	for (int i = 0; i < n; i++) {
		int a = hz_learn_arm(HZ_LEARN_ALONE, c, size);
		ones += a == 1;
		hz_learn_record(HZ_LEARN_ALONE, c, size, a, cost[a] * (size >> 10));
	}
	return ones;
}

Test(learn, every_arm_tried_first_in_runs, .init = setup)
{
	for (int i = 0; i < 15; i++) {
		int a = hz_learn_arm(HZ_LEARN_ALONE, 1, 8 * MiB);
		cr_assert_eq(a, i / 8, "call %d took arm %d: runs of 8", i, a);
		hz_learn_record(HZ_LEARN_ALONE, 1, 8 * MiB, a, a ? 2000 : 1000);
	}
	cr_assert_eq(hz_learn[HZ_LEARN_ALONE][1][2].n[0], 4, "the first 4 of a run are not samples");
	cr_assert_eq(hz_learn[HZ_LEARN_ALONE][1][2].n[1], 3);
	cr_assert_eq(hz_learn_arm(HZ_LEARN_ALONE, 1, 8 * MiB), 0, "every arm sampled: the cheaper");
}

Test(learn, back_from_a_look_at_another_arm_no_sample_at_first, .init = setup)
{
	/* Learnt: the cached arm. Then a look at the other arm, whose fills
	 * leave the cache cold: the cached arm's first fills back cost 5x
	 * and are not samples, so the look changes nothing. */
	size_t n = 8 * MiB;
	const uint64_t cost[2] = {100, 110};
	run(1, n, 16, cost);
	int switched = 0, back = 0;
	for (int i = 0; i < 2 * EXPLORE_CALLS; i++) {
		int a = hz_learn_arm(HZ_LEARN_ALONE, 1, n);
		back = a == 0 ? back + 1 : 0;
		switched |= a == 1;
		uint64_t t = a == 1 ? 110 : switched && back <= 4 ? 500 : 100;
		hz_learn_record(HZ_LEARN_ALONE, 1, n, a, t * (n >> 10));
	}
	cr_assert(switched, "the other arm was looked at");
	cr_assert_eq(hz_learn_best(HZ_LEARN_ALONE, 1, n), hz_learn_kernel(1, 0), "the cold fills back decided");
}

Test(learn, the_cheaper_arm_taken, .init = setup)
{
	const uint64_t stream_cheaper[2] = {200, 100}, cached_cheaper[2] = {100, 200};
	run(1, 64 * MiB, 16, stream_cheaper);
	int ones = run(1, 64 * MiB, 1000, stream_cheaper);
	cr_assert_geq(ones, 990, "streaming half the cost: %d of 1000", ones);
	cr_assert_lt(ones, 1000, "another arm tried now and then");
	run(1, 32 * MiB, 16, cached_cheaper);
	ones = run(1, 32 * MiB, 1000, cached_cheaper);
	cr_assert_leq(ones, 10, "cached half the cost: %d of 1000 streamed", ones);
	cr_assert_gt(ones, 0);
}

Test(learn, the_cached_arm_kept_within_a_fifth, .init = setup)
{
	const uint64_t close[2] = {100, 85};
	run(0, 16 * MiB, 16, close);
	int ones = run(0, 16 * MiB, 1000, close);
	cr_assert_leq(ones, 20, "15%% cheaper is not enough: %d of 1000", ones);
}

Test(learn, one_stall_does_not_decide, .init = setup)
{
	/* The cached arm's samples 100, 100 and a stalled 1000; streaming's
	 * 140: the cached arm is the cheaper. */
	size_t n = 8 * MiB;
	const uint64_t stalled[3] = {100, 100, 1000};
	for (int i = 0; i < 16; i++) {
		int a = hz_learn_arm(HZ_LEARN_ALONE, 1, n);
		uint64_t cost = a == 0 ? stalled[(i + 2) % 3] : 140;
		hz_learn_record(HZ_LEARN_ALONE, 1, n, a, cost * (n >> 10));
	}
	cr_assert_eq(hz_learn[HZ_LEARN_ALONE][1][2].n[0], 4);
	cr_assert_eq(hz_learn[HZ_LEARN_ALONE][1][2].n[1], 3);
	cr_assert_eq(hz_learn_best(HZ_LEARN_ALONE, 1, n), hz_learn_kernel(1, 0), "the stall decided");
}

Test(learn, ways_apart, .init = setup)
{
	/* Alone, streaming is the cheaper; split, the cached kernel. Each
	 * way keeps its own answer, and a class not learnt has the rule's. */
	const uint64_t alone[2] = {200, 100}, split[2] = {100, 200};
	size_t n = 128 * MiB;
	run(1, n, 16, alone);
	for (int i = 0; i < 16; i++) {
		int a = hz_learn_arm(HZ_LEARN_SPLIT, 1, n);
		hz_learn_record(HZ_LEARN_SPLIT, 1, n, a, split[a] * (n >> 10));
	}
	cr_assert_eq(hz_learn_best(HZ_LEARN_ALONE, 1, n), hz_learn_kernel(1, 1));
	cr_assert_eq(hz_learn_best(HZ_LEARN_SPLIT, 1, n), hz_learn_kernel(1, 0));
	cr_assert_eq(hz_learn_best(HZ_LEARN_SPLIT, 0, n), hz_policy_pick(&hz_policy, 0, n),
		     "nothing learnt: the rule");
}

Test(learn, a_change_is_seen, .init = setup)
{
	const uint64_t before[2] = {100, 300}, after[2] = {300, 100};
	run(1, 128 * MiB, 500, before);
	cr_assert_eq(run(1, 128 * MiB, 100, before) < 5, 1);
	int ones = 0;
	for (int k = 0; k < 20 && ones < 50; k++)
		ones = run(1, 128 * MiB, 100, after);
	cr_assert_geq(ones, 50, "the streaming arm took over once it got cheaper");
}

Test(learn, classes_apart, .init = setup)
{
	const uint64_t stream_cheaper[2] = {200, 100};
	run(1, 96 * MiB, 500, stream_cheaper);
	cr_assert_eq(hz_learn[HZ_LEARN_ALONE][1][8].n[0] + hz_learn[HZ_LEARN_ALONE][1][8].n[1], 0, "64 MiB is a class of its own");
	cr_assert_gt(hz_learn[HZ_LEARN_ALONE][1][9].n[1], 0, "96 MiB's");
	cr_assert_eq(hz_learn_arm(HZ_LEARN_ALONE, 1, 64 * MiB), 0, "a new class starts with the cached arm");
	cr_assert_eq(hz_learn[HZ_LEARN_ALONE][0][9].calls, 0, "zero fills apart");
}

Test(learn, zero_only_kernel_a_third_arm, .init = setup)
{
	int z = -1;
	for (unsigned k = 0; k < hz_nkernels; k++)
		if (hz_kernels[k].flags & HZ_K_ZERO_ONLY && hz_kernel_usable(k))
			z = (int)k;
	if (z < 0)
		cr_skip_test("no zero-only kernel on this CPU");
	hz_policy.zero[2] = (uint8_t)z;
	cr_assert_eq(hz_learn_arms(0), 3);
	cr_assert_eq(hz_learn_arms(1), 2);
	cr_assert_eq(hz_learn_kernel(0, 1), (unsigned)z);
	cr_assert_eq(hz_learn_kernel(0, 2), hz_policy.fill[2]);
}

Test(learn, a_fill_writes_every_byte, .init = setup)
{
	size_t n = 4 * MiB + 100;
	unsigned char *b = malloc(n + 2);
	cr_assert_not_null(b);
	for (int i = 0; i < 12; i++) {
		memset(b, 0xee, n + 2);
		unsigned k = hz_learn_fill(b + 1, 0x5a, n);
		cr_assert(k == hz_policy.fill[1] || k == hz_policy.fill[2]);
		cr_assert_eq(b[0], 0xee);
		cr_assert_eq(b[n + 1], 0xee);
		for (size_t j = 1; j <= n; j++)
			if (b[j] != 0x5a)
				cr_assert_fail("byte %zu is %d after fill %d", j, b[j], i);
	}
	free(b);
}
