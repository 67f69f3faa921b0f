/* The library's configuration: one table of HUGEZERO_* environment
 * variables, each with its type, its default and a line of documentation
 * (the README's reference and scripts' are generated from it), read once
 * at start; never in setuid programs. Every default is stated here and
 * only here: the rooms below are configured from hz_option(). */
#ifndef HZ_OPTIONS_H
#define HZ_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

enum hz_option {
	HZ_OPT_VERBOSE,
	HZ_OPT_MODE,
	HZ_OPT_KERNEL,
	HZ_OPT_KERNEL_SMALL,
	HZ_OPT_KERNEL_MEDIUM,
	HZ_OPT_KERNEL_LARGE,
	HZ_OPT_KERNEL_NEAR,
	HZ_OPT_FRONT,
	HZ_OPT_MEDIUM_THRESHOLD,
	HZ_OPT_NT_THRESHOLD,
	HZ_OPT_STREAMING,
	HZ_OPT_CLZERO,
	HZ_OPT_L2_SIZE,
	HZ_OPT_L3_SIZE,
	HZ_OPT_DIRTY_MAX,
	HZ_OPT_DIRTY_DECAY_MS,
	HZ_OPT_LARGE_MIN,
	HZ_OPT_SMALL,
	HZ_OPT_THP,
	HZ_OPT_FRESH,
	HZ_OPT_HUGETLB,
	HZ_OPT_CALLOC_DIRTY,
	HZ_OPT_BACKGROUND,
	HZ_OPT_RESERVE,
	HZ_OPT_STATS,
	HZ_OPT_STATS_FORMAT,
	HZ_OPT_STATS_INTERVAL_MS,
	HZ_OPT_LABELS,
	HZ_OPT_AB,
	HZ_OPT_AB_SEED,
	HZ_OPT_AB_MIN,
	HZ_OPT_CALLSITES,
	HZ_OPT_COUNT
};

enum hz_option_type {
	HZ_OPT_BOOL,      /* 0 or 1 (also off/on, no/yes, false/true) */
	HZ_OPT_AUTO_BOOL, /* auto (-1), 0 or 1 */
	HZ_OPT_SIZE,      /* bytes: digits and an optional K, M or G */
	HZ_OPT_UINT,      /* digits */
	HZ_OPT_NAME,      /* a word, as given */
};

/* An option's value: the table's default until the environment gives a
 * valid one. */
struct hz_option_value {
	int given;       /* from the environment */
	int num;         /* BOOL, AUTO_BOOL */
	uint64_t size;   /* SIZE, UINT */
	const char *str; /* NAME (into the environment or the table); NULL: none */
};

struct hz_option_desc {
	const char *name; /* without the HUGEZERO_ prefix */
	enum hz_option_type type;
	struct hz_option_value def;
	/* How the reference shows a default the library derives at run time
	 * (def is then 0 or NULL: "L2", "detected", "(policy)"); NULL: the
	 * default value itself. */
	const char *shown;
	const char *doc; /* one line */
};

extern const struct hz_option_desc hz_options[HZ_OPT_COUNT];

/* The option's value: what the environment gave, or the default. */
const struct hz_option_value *hz_option(enum hz_option o);
/* Reads every option from the environment (without allocating); names
 * invalid values on stderr and keeps their defaults. Returns the number
 * of invalid values. */
int hz_options_load(void);
/* Parses a size: digits with an optional K, M or G suffix (powers of 1024,
 * "KiB" and "KB" accepted). 0 and the value in *out, or -1 on bad syntax
 * or overflow. */
int hz_parse_size(const char *s, size_t *out);
/* The default as the reference shows it, into buf. */
const char *hz_option_default_text(enum hz_option o, char *buf, size_t cap);

/* The rooms started from the options, once loaded; a value a room cannot
 * take is named on stderr (and its default used, or the room's own
 * choice). The engine (hz_engine_setup): */
void hz_options_start_engine(void);
/* The arenas (hz_large_setup); returns from which size blocks go to them:
 * SIZE_MAX where pages are not 4 KiB, which the arenas assume. */
size_t hz_options_start_arenas(void);
/* The OS primitives, the options, the engine and the arenas, as the
 * library starts them, for programs that link the rooms without it: the
 * unit tests and the benchmarks. */
void hz_options_setup(void);

#pragma GCC visibility pop

#endif
