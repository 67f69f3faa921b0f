/* jemalloc's log, exp and round as the library provides them
 * (allocator/small_libs.c), against libm's, linked with that file only;
 * its unwinder, with libgcc_s loaded. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <unwind.h>

#include "../../allocator/allocator.h"

static double rel(double a, double b)
{
	return fabs(a - b) / fmax(fabs(b), 1e-300);
}

Test(small_libs, log_as_libm)
{
	for (double x = 1e-300; x < 1e300; x *= 1.0137)
		cr_assert_leq(rel(hz_je_log(x), log(x)), 4e-16, "log(%g): %.17g, libm %.17g", x, hz_je_log(x), log(x));
	for (double x = 0.5; x < 2; x += 1e-4)
		cr_assert_leq(fabs(hz_je_log(x) - log(x)), 4e-16, "log(%g) near 1", x);
	cr_assert_eq(hz_je_log(1), 0);
	cr_assert(isinf(hz_je_log(0)) && hz_je_log(0) < 0);
	cr_assert(isnan(hz_je_log(-1)));
	cr_assert(isinf(hz_je_log(INFINITY)));
	cr_assert(isnan(hz_je_log(NAN)));
}

Test(small_libs, exp_as_libm)
{
	for (double x = -740; x < 709; x += 0.00731)
		cr_assert_leq(rel(hz_je_exp(x), exp(x)), 2e-15, "exp(%g): %.17g, libm %.17g", x, hz_je_exp(x), exp(x));
	cr_assert_eq(hz_je_exp(0), 1);
	cr_assert(isinf(hz_je_exp(710)));
	cr_assert_eq(hz_je_exp(-746), 0);
	cr_assert(isnan(hz_je_exp(NAN)));
}

Test(small_libs, round_as_libm)
{
	double xs[] = {0, 0.5, -0.5, 1.5, -1.5, 2.5, 0.49999999999999994, -0.49999999999999994, 1e15 + 0.5,
		       4503599627370495.5, 4503599627370496.0, 1e300, -1e300, 123.456, -123.456, INFINITY};
	for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
		cr_assert_eq(hz_je_round(xs[i]), round(xs[i]), "round(%.17g): %.17g", xs[i], hz_je_round(xs[i]));
	cr_assert(isnan(hz_je_round(NAN)));
	for (double x = -1000; x < 1000; x += 0.125)
		cr_assert_eq(hz_je_round(x), round(x), "round(%g)", x);
}

static int frames(struct _Unwind_Context *ctx, void *arg)
{
	(*(int *)arg)++;
	return hz_je_unwind_getip(ctx) ? _URC_NO_REASON : _URC_END_OF_STACK;
}

Test(small_libs, unwinder_with_libgcc_s)
{
	int n = 0;
	hz_je_unwind_backtrace(frames, &n);
	cr_assert_geq(n, 2, "%d frames", n);
}
