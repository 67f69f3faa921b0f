/* What the embedded jemalloc calls outside libc (small.c;
 * scripts/jemalloc-rename.sh renames its calls): log, exp and round, and
 * libgcc's unwinder. Only its heap profiling calls them (the sampling
 * interval, its dumps, its backtraces), which is off unless MALLOC_CONF
 * turns it on; here so that neither libm nor libgcc_s is loaded into every
 * program for them. The math in double precision within a few ulps, from
 * frexp and ldexp (libc's) and short series; the unwinder libgcc_s's where
 * the program has loaded it (every C++ program), otherwise an empty
 * backtrace. */
#include <math.h>
#include <unwind.h>

#include "allocator.h"

#define LN2 0.69314718055994530942

double hz_je_log(double x)
{
	if (!(x > 0) || x > 1.7976931348623157e308)
		return x == 0 ? -__builtin_inf() : x < 0 ? __builtin_nan("") : x; /* 0, <0, NaN, inf */
	int e;
	double m = frexp(x, &e); /* x = m 2^e, m in [0.5, 1) */
	if (m < 0.70710678118654752440) {
		m *= 2;
		e--;
	}
	/* log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172 */
	double s = (m - 1) / (m + 1), s2 = s * s, term = s, sum = 0;
	for (int k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= s2;
	}
	return 2 * sum + e * LN2;
}

double hz_je_exp(double x)
{
	if (x != x)
		return x;
	if (x > 709.8)
		return __builtin_inf();
	if (x < -745.2)
		return 0;
	/* x = k ln2 + r, |r| <= ln2 / 2: exp x = 2^k exp r */
	int k = (int)(x / LN2 + (x < 0 ? -0.5 : 0.5));
	/* ln 2 in two parts (k * LN2_HI is exact), so r keeps its precision */
	double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10, term = 1, sum = 1;
	for (int n = 1; n < 20; n++) {
		term *= r / n;
		sum += term;
	}
	return ldexp(sum, k);
}

/* Half away from zero, as C's round. */
double hz_je_round(double x)
{
	if (!(__builtin_fabs(x) < 4503599627370496.0)) /* 2^52: an integer already, inf or NaN */
		return x;
	double t = (double)(long long)x, d = x - t; /* exact */
	return d >= 0.5 ? t + 1 : d <= -0.5 ? t - 1 : t;
}

#pragma weak _Unwind_Backtrace
#pragma weak _Unwind_GetIP

int hz_je_unwind_backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg)
{
	/* fn returns an _Unwind_Reason_Code, as an int */
	return _Unwind_Backtrace ? (int)_Unwind_Backtrace((_Unwind_Trace_Fn)fn, arg) : _URC_END_OF_STACK;
}

/* Called only from a backtrace's callback: libgcc_s is there. */
uintptr_t hz_je_unwind_getip(struct _Unwind_Context *ctx)
{
	return _Unwind_GetIP(ctx);
}
