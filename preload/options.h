/* The library's configuration: one table of HUGEZERO_* environment
 * variables, read once at initialisation (never in setuid programs). */
#ifndef HZ_OPTIONS_H
#define HZ_OPTIONS_H

#include <stddef.h>

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
	HZ_OPT_THP,
	HZ_OPT_HUGETLB,
	HZ_OPT_CALLOC_DIRTY,
	HZ_OPT_STATS,
	HZ_OPT_STATS_FORMAT,
	HZ_OPT_STATS_INTERVAL_MS,
	HZ_OPT_AB,
	HZ_OPT_AB_SEED,
	HZ_OPT_AB_MIN,
	HZ_OPT_CALLSITES,
	HZ_OPT_COUNT
};

enum hz_option_type { HZ_OPT_BOOL, HZ_OPT_AUTO_BOOL, HZ_OPT_SIZE, HZ_OPT_UINT, HZ_OPT_NAME };

struct hz_option_desc {
	const char *name; /* without the HUGEZERO_ prefix */
	enum hz_option_type type;
	const char *def;  /* default, as documented */
	const char *doc;  /* one line */
};

struct hz_option_value {
	int set;          /* given in the environment and valid */
	int num;          /* bool (0/1), auto bool (-1: auto, 0, 1) */
	size_t size;      /* HZ_OPT_SIZE, in bytes; HZ_OPT_UINT */
	const char *str;  /* HZ_OPT_NAME: points into the environment */
};

__attribute__((visibility("hidden"))) extern const struct hz_option_desc hz_options[HZ_OPT_COUNT];
__attribute__((visibility("hidden"))) extern struct hz_option_value hz_option_values[HZ_OPT_COUNT];

/* Reads every option from the environment via getenv (which does not
 * allocate); reports invalid values on stderr and leaves them unset.
 * Returns the number of invalid values. */
__attribute__((visibility("hidden"))) int hz_options_load(void);
/* Parses a size: digits with an optional K, M or G suffix (powers of 1024).
 * Returns 0 and stores it, or -1 on bad syntax or overflow. */
__attribute__((visibility("hidden"))) int hz_parse_size(const char *s, size_t *out);
/* Writes a message to stderr without allocating. */
__attribute__((visibility("hidden"))) void hz_log(const char *a, const char *b, const char *c);

#endif
