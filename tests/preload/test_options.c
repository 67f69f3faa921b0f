/* The option table, its parsers and its loader. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/preload.h"

Test(options, parse_size)
{
	size_t v;
	cr_assert_eq(hz_parse_size("0", &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(hz_parse_size("4096", &v), 0);
	cr_assert_eq(v, 4096);
	cr_assert_eq(hz_parse_size("64K", &v), 0);
	cr_assert_eq(v, 64 << 10);
	cr_assert_eq(hz_parse_size("32MiB", &v), 0);
	cr_assert_eq(v, 32 << 20);
	cr_assert_eq(hz_parse_size("2g", &v), 0);
	cr_assert_eq(v, (size_t)2 << 30);
	const char *bad[] = {"", "K", "12X", "-1", "1.5M", "99999999999999999999",
			     "17179869184G", "4 K"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(hz_parse_size(bad[i], &v), -1, "'%s' accepted", bad[i]);
}

Test(options, parse_fraction)
{
	double v;
	const struct {
		const char *s;
		double v;
	} good[] = {{"0", 0}, {"1", 1}, {"0.5", 0.5}, {".25", 0.25}, {"1.000", 1}, {"00.125", 0.125}, {"0.", 0},
		    {"1e-05", 1e-05}, {"5E-1", 0.5}, {"1e0", 1}, {"0.5e+0", 0.5}, {"25e-2", 0.25}};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		cr_assert_eq(hz_parse_fraction(good[i].s, &v), 0, "'%s' refused", good[i].s);
		cr_assert_float_eq(v, good[i].v, 1e-15, "'%s' read as %g", good[i].s, v);
	}
	const char *bad[] = {"", ".", "2", "1.5", "1.0001", "10", "-0.5", "0.5x", " 0.5", "0,5", "x",
			     "1e1", "1e", "e-1", "1e-", "2e0", "1e-1x", "inf", "nan"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(hz_parse_fraction(bad[i], &v), -1, "'%s' accepted", bad[i]);
}

/* HUGEZERO_PROCESS_AB and HUGEZERO_AB: fractions; anything else is named
 * and ignored as every invalid value is, keeping the default (no draw, no
 * arms). */
Test(options, fractions_from_environment)
{
	setenv("HUGEZERO_PROCESS_AB", "0.25", 1);
	setenv("HUGEZERO_AB", ".5", 1);
	cr_assert_eq(hz_options_load(), 0);
	cr_assert(hz_option(HZ_OPT_PROCESS_AB)->given);
	cr_assert_float_eq(hz_option(HZ_OPT_PROCESS_AB)->frac, 0.25, 1e-15);
	cr_assert(hz_option(HZ_OPT_AB)->given);
	cr_assert_float_eq(hz_option(HZ_OPT_AB)->frac, 0.5, 1e-15);
	setenv("HUGEZERO_PROCESS_AB", "1.5", 1);
	setenv("HUGEZERO_AB", "half", 1);
	cr_assert_eq(hz_options_load(), 2);
	cr_assert_not(hz_option(HZ_OPT_PROCESS_AB)->given);
	cr_assert_eq(hz_option(HZ_OPT_PROCESS_AB)->frac, 0);
	cr_assert_not(hz_option(HZ_OPT_AB)->given);
	unsetenv("HUGEZERO_PROCESS_AB");
	unsetenv("HUGEZERO_AB");
	cr_assert_eq(hz_options_load(), 0);
	cr_assert_eq(hz_option(HZ_OPT_PROCESS_AB)->frac, 0);
	char buf[32];
	cr_assert_str_eq(hz_option_default_text(HZ_OPT_PROCESS_AB, buf, sizeof buf), "0");
	cr_assert_str_eq(hz_option_default_text(HZ_OPT_AB, buf, sizeof buf), "(off)");
}

Test(options, load_from_environment)
{
	setenv("HUGEZERO_NT_THRESHOLD", "24M", 1);
	setenv("HUGEZERO_STREAMING", "auto", 1);
	setenv("HUGEZERO_CLZERO", "off", 1);
	setenv("HUGEZERO_KERNEL", "c", 1);
	setenv("HUGEZERO_L2_SIZE", "lots", 1); /* invalid: reported, ignored */
	setenv("HUGEZERO_DIRTY_MAX", "64M", 1);
	setenv("HUGEZERO_DIRTY_DECAY_MS", "5s", 1); /* invalid: milliseconds, digits only */
	cr_assert_eq(hz_options_load(), 2);
	cr_assert_eq(hz_option(HZ_OPT_DIRTY_MAX)->size, 64 << 20);
	/* An invalid value keeps the default. */
	cr_assert_not(hz_option(HZ_OPT_DIRTY_DECAY_MS)->given);
	cr_assert_eq(hz_option(HZ_OPT_DIRTY_DECAY_MS)->size, hz_options[HZ_OPT_DIRTY_DECAY_MS].def.size);
	setenv("HUGEZERO_DIRTY_DECAY_MS", "250", 1);
	cr_assert_eq(hz_options_load(), 1);
	cr_assert_eq(hz_option(HZ_OPT_DIRTY_DECAY_MS)->size, 250);
	cr_assert(hz_option(HZ_OPT_NT_THRESHOLD)->given);
	cr_assert_eq(hz_option(HZ_OPT_NT_THRESHOLD)->size, 24 << 20);
	cr_assert_eq(hz_option(HZ_OPT_STREAMING)->num, -1);
	cr_assert_eq(hz_option(HZ_OPT_CLZERO)->num, 0);
	cr_assert_str_eq(hz_option(HZ_OPT_KERNEL)->str, "c");
	cr_assert_not(hz_option(HZ_OPT_L2_SIZE)->given);
	cr_assert_not(hz_option(HZ_OPT_VERBOSE)->given);
	/* Not given: the table's default, typed. */
	unsetenv("HUGEZERO_DIRTY_MAX");
	cr_assert_eq(hz_options_load(), 1);
	cr_assert_eq(hz_option(HZ_OPT_DIRTY_MAX)->size, hz_options[HZ_OPT_DIRTY_MAX].def.size);
	cr_assert_str_eq(hz_option(HZ_OPT_CALLOC_DIRTY)->str, hz_options[HZ_OPT_CALLOC_DIRTY].def.str);
}

Test(options, table_complete)
{
	for (int i = 0; i < HZ_OPT_COUNT; i++) {
		const struct hz_option_desc *o = &hz_options[i];
		cr_assert_not_null(o->name, "option %d has no row", i);
		cr_assert_not_null(o->doc);
		/* A default the library derives at run time says how it reads. */
		if ((o->type == HZ_OPT_NAME && !o->def.str) || (o->type == HZ_OPT_SIZE && !o->def.size))
			cr_assert_not_null(o->shown, "HUGEZERO_%s: no default, and no text for it", o->name);
	}
}
