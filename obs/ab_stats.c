/* The arms' statistics (ab.h): histogram buckets, quantiles and the B/A
 * interval. Pure functions of their arguments. No libm: ldexp and frexp
 * are libc's, the square root the instruction (-fno-math-errno), so a
 * program that does not load libm does not load it for the library. */
#include <math.h>

#include "ab.h"

double hz_ab_bucket_ns(int b)
{
	int maj = b / HZ_AB_H_SUB, sub = b % HZ_AB_H_SUB;
	return ldexp(1.0 + (double)sub / HZ_AB_H_SUB, maj + HZ_AB_H_LO);
}

int hz_ab_bucket(double ns)
{
	if (ns < ldexp(1, HZ_AB_H_LO))
		return 0;
	int e;
	double m = frexp(ns, &e); /* ns = m * 2^e, m in [0.5, 1) */
	int maj = e - 1 - HZ_AB_H_LO, sub = (int)((m * 2 - 1) * HZ_AB_H_SUB);
	if (maj >= HZ_AB_H_MAJ)
		return HZ_AB_BUCKETS - 1;
	return maj * HZ_AB_H_SUB + sub;
}

void hz_ab_compare(const struct hz_ab_cell *a, const struct hz_ab_cell *b, struct hz_ab_result *r)
{
	*r = (struct hz_ab_result){0, 0, 0, 0, 0, "not enough calls"};
	if (a->calls < 2 || b->calls < 2)
		return;
	double na = (double)a->calls, nb = (double)b->calls;
	r->mean_a = a->ns / na;
	r->mean_b = b->ns / nb;
	double va = (a->ns2 - na * r->mean_a * r->mean_a) / (na - 1);
	double vb = (b->ns2 - nb * r->mean_b * r->mean_b) / (nb - 1);
	if (va < 0)
		va = 0;
	if (vb < 0)
		vb = 0;
	r->ratio = r->mean_b / r->mean_a;
	/* var(mB/mA) ~ r^2 (var(mB)/mB^2 + var(mA)/mA^2) */
	double rel = vb / (nb * r->mean_b * r->mean_b) + va / (na * r->mean_a * r->mean_a);
	double half = 1.96 * r->ratio * __builtin_sqrt(rel);
	r->lo = r->ratio - half;
	r->hi = r->ratio + half;
	r->verdict = r->hi < 1 ? "B faster" : r->lo > 1 ? "B slower" : "no difference";
}

double hz_ab_quantile(const uint64_t *h, double q)
{
	uint64_t total = 0, seen = 0;
	for (int b = 0; b < HZ_AB_BUCKETS; b++)
		total += h[b];
	if (!total)
		return 0;
	double x = q * (double)total; /* ceil, for 0 <= x <= total */
	uint64_t want = (uint64_t)x;
	want += (double)want < x;
	for (int b = 0; b < HZ_AB_BUCKETS; b++) {
		seen += h[b];
		if (seen >= want && seen)
			return b + 1 < HZ_AB_BUCKETS ? (hz_ab_bucket_ns(b) + hz_ab_bucket_ns(b + 1)) / 2
						      : hz_ab_bucket_ns(b);
	}
	return hz_ab_bucket_ns(HZ_AB_BUCKETS - 1);
}
