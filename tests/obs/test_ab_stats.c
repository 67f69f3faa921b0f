/* The arms' statistics: histogram buckets, quantiles, and the B/A ratio's
 * interval, against figures computed here from the samples themselves. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../obs/obs.h"

static uint64_t rng = 88172645463325252ull;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) * 0x1p-53;
}

Test(ab_stats, buckets_partition_the_times)
{
	/* Log-linear: HZ_AB_H_SUB buckets a power of two, increasing. */
	for (int b = 0; b + HZ_AB_H_SUB < HZ_AB_BUCKETS; b++) {
		cr_assert_lt(hz_ab_bucket_ns(b), hz_ab_bucket_ns(b + 1));
		cr_assert_float_eq(hz_ab_bucket_ns(b + HZ_AB_H_SUB), 2 * hz_ab_bucket_ns(b), 1e-9);
	}
	/* Every time falls in the bucket whose bounds hold it. */
	double top = hz_ab_bucket_ns(HZ_AB_BUCKETS - 1);
	for (int i = 0; i < 100000; i++) {
		double ns = exp2(HZ_AB_H_LO + uniform() * (HZ_AB_H_MAJ - 0.01));
		int b = hz_ab_bucket(ns);
		cr_assert(b >= 0 && b < HZ_AB_BUCKETS);
		cr_assert_leq(hz_ab_bucket_ns(b), ns, "%g ns in bucket %d", ns, b);
		if (b + 1 < HZ_AB_BUCKETS)
			cr_assert_lt(ns, hz_ab_bucket_ns(b + 1), "%g ns in bucket %d", ns, b);
	}
	cr_assert_eq(hz_ab_bucket(0), 0);
	cr_assert_eq(hz_ab_bucket(hz_ab_bucket_ns(0) / 2), 0, "below the range: the first");
	cr_assert_eq(hz_ab_bucket(top * 4), HZ_AB_BUCKETS - 1, "above it: the last");
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

Test(ab_stats, quantiles_name_the_bucket_of_the_sample_quantile)
{
	enum { N = 5001 };
	static double v[N];
	uint64_t h[HZ_AB_BUCKETS] = {0};
	cr_assert_eq(hz_ab_quantile(h, 0.5), 0, "empty histogram");
	for (int i = 0; i < N; i++) {
		v[i] = 200 * exp(3 * uniform()); /* 200 ns to 4 us, skewed */
		h[hz_ab_bucket(v[i])]++;
	}
	qsort(v, N, sizeof v[0], cmp);
	const double qs[] = {0.01, 0.1, 0.5, 0.9, 0.99, 1};
	for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
		double x = v[(size_t)ceil(qs[i] * N) - 1]; /* the sample's q-quantile */
		int b = hz_ab_bucket(x);
		double mid = (hz_ab_bucket_ns(b) + hz_ab_bucket_ns(b + 1)) / 2;
		cr_assert_float_eq(hz_ab_quantile(h, qs[i]), mid, 1e-9, "q %g: sample %g ns", qs[i], x);
	}
}

/* An arm's cell from n samples of mean m, spread +-s uniformly; the
 * samples' mean and variance, by two passes, into *mean and *var. */
static struct hz_ab_cell arm(int n, double m, double s, double *mean, double *var)
{
	struct hz_ab_cell c = {0};
	double x[4096], sum = 0, dev = 0;
	cr_assert_leq(n, 4096);
	for (int i = 0; i < n; i++) {
		x[i] = m + s * (2 * uniform() - 1);
		c.calls++;
		c.bytes += 4096;
		c.ns += x[i];
		c.ns2 += x[i] * x[i];
		sum += x[i];
	}
	*mean = sum / n;
	for (int i = 0; i < n; i++)
		dev += (x[i] - *mean) * (x[i] - *mean);
	*var = dev / (n - 1);
	return c;
}

Test(ab_stats, compare_matches_the_samples)
{
	double ma, va, mb, vb;
	struct hz_ab_cell a = arm(1000, 1000, 300, &ma, &va), b = arm(700, 800, 500, &mb, &vb);
	struct hz_ab_result r;
	hz_ab_compare(&a, &b, &r);
	cr_assert_float_eq(r.mean_a, ma, 1e-9 * ma);
	cr_assert_float_eq(r.mean_b, mb, 1e-9 * mb);
	cr_assert_float_eq(r.ratio, mb / ma, 1e-12);
	/* The delta method's standard error of mB/mA, from the samples. */
	double se = mb / ma * sqrt(vb / (700 * mb * mb) + va / (1000 * ma * ma));
	cr_assert_float_eq(r.lo, r.ratio - 1.96 * se, 1e-6, "lo %g", r.lo);
	cr_assert_float_eq(r.hi, r.ratio + 1.96 * se, 1e-6, "hi %g", r.hi);
	cr_assert_str_eq(r.verdict, "B faster", "B's mean is 20%% lower: [%g, %g]", r.lo, r.hi);
	hz_ab_compare(&b, &a, &r);
	cr_assert_str_eq(r.verdict, "B slower");
	cr_assert_gt(r.lo, 1);

	/* Fewer than two calls an arm: no figures. */
	struct hz_ab_cell one = a;
	one.calls = 1;
	hz_ab_compare(&one, &b, &r);
	cr_assert_str_eq(r.verdict, "not enough calls");
	cr_assert_eq(r.ratio, 0);
	cr_assert_eq(r.lo, 0);
	/* Equal times: a ratio of 1 and no difference, never a negative variance. */
	struct hz_ab_cell same = {10, 100, 10 * 500.0, 10 * 500.0 * 500.0};
	hz_ab_compare(&same, &same, &r);
	cr_assert_float_eq(r.ratio, 1, 1e-12);
	cr_assert_str_eq(r.verdict, "no difference");
	cr_assert_leq(r.lo, 1);
	cr_assert_geq(r.hi, 1);
}

/* Arms of one distribution: the 95% interval holds 1 in about 95% of
 * experiments (binomial bounds for 600 of them). */
Test(ab_stats, interval_covers_equal_arms)
{
	int covered = 0, n = 600;
	for (int e = 0; e < n; e++) {
		double m, v;
		struct hz_ab_cell a = arm(200, 1000, 400, &m, &v), b = arm(200, 1000, 400, &m, &v);
		struct hz_ab_result r;
		hz_ab_compare(&a, &b, &r);
		covered += !strcmp(r.verdict, "no difference");
	}
	cr_assert(covered >= 0.92 * n && covered <= 0.98 * n, "%d of %d intervals hold 1", covered, n);
}

/* The process's arm (HUGEZERO_PROCESS_AB): 0 never off, 1 always, a seed
 * always its own mode (the known answers tests/programs/fleet.sh runs
 * with), off in about the share asked for over many seeds, and a process
 * off at one share off at every larger one. */
Test(ab_stats, process_draw)
{
	/* Seeds 1 to 8 at 0.5: off for 3, 4, 5 and 7. */
	static const int off_at_half[8] = {0, 0, 1, 1, 1, 0, 1, 0};
	for (uint64_t s = 1; s <= 8; s++) {
		cr_assert_eq(hz_ab_process_off(0.5, s), off_at_half[s - 1], "seed %llu", (unsigned long long)s);
		cr_assert_eq(hz_ab_process_off(0.5, s), hz_ab_process_off(0.5, s));
	}
	int off[3] = {0, 0, 0}, n = 100000;
	const double shares[3] = {0, 0.3, 1};
	for (int i = 0; i < n; i++) {
		uint64_t s = (uint64_t)i * 7919 + (uint64_t)(uniform() * 1e12);
		for (int k = 0; k < 3; k++)
			off[k] += hz_ab_process_off(shares[k], s);
		if (hz_ab_process_off(0.3, s))
			cr_assert(hz_ab_process_off(0.31, s), "seed %llu: off at 0.3, on at 0.31", (unsigned long long)s);
	}
	cr_assert_eq(off[0], 0, "share 0: %d processes off", off[0]);
	cr_assert_eq(off[2], n, "share 1: %d of %d off", off[2], n);
	/* Binomial(100000, 0.3): sd 145; 5 sd either side. */
	cr_assert(off[1] > 0.3 * n - 725 && off[1] < 0.3 * n + 725, "share 0.3: %d of %d off", off[1], n);
}
