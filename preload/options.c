/* The option table and its loader. README.md's option reference is
 * generated from this table (scripts/options-doc.sh) and a test keeps the
 * two equal. */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "options.h"

const struct hz_option_desc hz_options[HZ_OPT_COUNT] = {
	[HZ_OPT_VERBOSE] = {"VERBOSE", HZ_OPT_BOOL, "0",
			    "print the detected CPU, caches and kernel policy to stderr at start"},
	[HZ_OPT_MODE] = {"MODE", HZ_OPT_NAME, "on",
			 "off forwards memset and the whole malloc family to glibc (read at the first allocation)"},
	[HZ_OPT_KERNEL] = {"KERNEL", HZ_OPT_NAME, "(policy)",
			   "use this kernel for every size above 16 KiB (names: see Kernels in README.md)"},
	[HZ_OPT_KERNEL_SMALL] = {"KERNEL_SMALL", HZ_OPT_NAME, "(policy)",
				 "kernel for sizes above 16 KiB and below MEDIUM_THRESHOLD"},
	[HZ_OPT_KERNEL_MEDIUM] = {"KERNEL_MEDIUM", HZ_OPT_NAME, "(policy)",
				  "kernel from MEDIUM_THRESHOLD to below NT_THRESHOLD"},
	[HZ_OPT_KERNEL_LARGE] = {"KERNEL_LARGE", HZ_OPT_NAME, "(policy)",
				 "kernel from NT_THRESHOLD up"},
	[HZ_OPT_KERNEL_NEAR] = {"KERNEL_NEAR", HZ_OPT_NAME, "(policy)",
				"kernel for the hint's neighbourhood in hinted clears (not a streaming one)"},
	[HZ_OPT_FRONT] = {"FRONT", HZ_OPT_NAME, "(widest)",
			  "small-size front end of memset: front_avx512, front_avx2, front_sse2 (x86-64)"},
	[HZ_OPT_MEDIUM_THRESHOLD] = {"MEDIUM_THRESHOLD", HZ_OPT_SIZE, "L2",
				     "size from which string stores replace vector stores"},
	[HZ_OPT_NT_THRESHOLD] = {"NT_THRESHOLD", HZ_OPT_SIZE, "L3",
				 "size from which streaming stores (or CLZERO for zero) are used"},
	[HZ_OPT_STREAMING] = {"STREAMING", HZ_OPT_AUTO_BOOL, "auto",
			      "0 never uses streaming stores or CLZERO: large sizes stay temporal"},
	[HZ_OPT_CLZERO] = {"CLZERO", HZ_OPT_AUTO_BOOL, "auto",
			   "0 never uses zero-only kernels (CLZERO, DC ZVA)"},
	[HZ_OPT_L2_SIZE] = {"L2_SIZE", HZ_OPT_SIZE, "detected",
			    "L2 cache size (per core) to assume, overriding detection"},
	[HZ_OPT_L3_SIZE] = {"L3_SIZE", HZ_OPT_SIZE, "detected",
			    "L3 cache size (per core complex) to assume, overriding detection"},
	[HZ_OPT_DIRTY_MAX] = {"DIRTY_MAX", HZ_OPT_SIZE, "256M",
			      "free dirty memory an arena keeps for reuse before it releases whole 2 MiB blocks"},
	[HZ_OPT_DIRTY_DECAY_MS] = {"DIRTY_DECAY_MS", HZ_OPT_UINT, "10000",
				   "free dirty memory older than this is released at the next free; 0 releases at once"},
	[HZ_OPT_LARGE_MIN] = {"LARGE_MIN", HZ_OPT_SIZE, "1M",
			      "blocks from this size up (at least 16K) live in the hugepage arenas; smaller ones in jemalloc"},
	[HZ_OPT_THP] = {"THP", HZ_OPT_BOOL, "1",
			"0 does not ask for transparent huge pages (MADV_HUGEPAGE) for the arenas' memory"},
	[HZ_OPT_HUGETLB] = {"HUGETLB", HZ_OPT_BOOL, "0",
			    "1 takes 64 MiB chunks from the hugetlb pool (MAP_HUGETLB) while it has 32 free pages; counted fallback to THP"},
	[HZ_OPT_CALLOC_DIRTY] = {"CALLOC_DIRTY", HZ_OPT_NAME, "clear",
				 "how calloc zeroes recycled dirty pages: clear (in place, hinted) or release (MADV_DONTNEED, refault)"},
	[HZ_OPT_STATS] = {"STATS", HZ_OPT_NAME, "(none)",
			  "write the counters at exit to stderr, or to this path (%p: the pid; else .PID appended), mode 0600, no symlinks"},
	[HZ_OPT_STATS_FORMAT] = {"STATS_FORMAT", HZ_OPT_NAME, "text",
				 "the report's format: text, json or prometheus (text exposition format)"},
	[HZ_OPT_STATS_INTERVAL_MS] = {"STATS_INTERVAL_MS", HZ_OPT_UINT, "0",
				      "also rewrite the report every this many ms, from a thread started only then"},
	[HZ_OPT_AB] = {"AB", HZ_OPT_NAME, "(off)",
		       "A/B arms: this fraction (0 to 1) of eligible calls goes to arm A (glibc's way), the rest to arm B (hugezero's)"},
	[HZ_OPT_AB_SEED] = {"AB_SEED", HZ_OPT_UINT, "(time)",
			    "seed of the arms' random assignment"},
	[HZ_OPT_AB_MIN] = {"AB_MIN", HZ_OPT_SIZE, "64K",
			   "memset and arena calloc calls from this size (above 16K) take part in the arms"},
	[HZ_OPT_CALLSITES] = {"CALLSITES", HZ_OPT_UINT, "0",
			      "sample the stack of 1 in this many large memset and calloc calls (libunwind); 0: off"},
};

struct hz_option_value hz_option_values[HZ_OPT_COUNT];

void hz_log(const char *a, const char *b, const char *c)
{
	const char *parts[] = {"hugezero: ", a, b, c, "\n"};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (parts[i] && write(2, parts[i], strlen(parts[i])) < 0)
			return;
}

int hz_parse_size(const char *s, size_t *out)
{
	size_t v = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (SIZE_MAX - 9) / 10)
			return -1;
		v = v * 10 + (size_t)(*p - '0');
	}
	if (p == s)
		return -1;
	unsigned shift = 0;
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	}
	if (*p == 'i' && shift) /* accept KiB-style "Ki", "MiB" */
		p++;
	if ((*p == 'B' || *p == 'b') && shift)
		p++;
	if (*p || v > (SIZE_MAX >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

static int parse_bool(const char *s, int allow_auto, int *out)
{
	static const char *const yes[] = {"1", "on", "yes", "true"};
	static const char *const no[] = {"0", "off", "no", "false"};
	for (int i = 0; i < 4; i++) {
		if (!strcmp(s, yes[i]))
			return *out = 1, 0;
		if (!strcmp(s, no[i]))
			return *out = 0, 0;
	}
	if (allow_auto && !strcmp(s, "auto"))
		return *out = -1, 0;
	return -1;
}

int hz_options_load(void)
{
	int bad = 0;
	/* The environment of a setuid program belongs to another user. */
	if (getauxval(AT_SECURE))
		return 0;
	for (int i = 0; i < HZ_OPT_COUNT; i++) {
		char name[64] = "HUGEZERO_";
		size_t len = strlen(hz_options[i].name);
		memcpy(name + 9, hz_options[i].name, len + 1);
		const char *s = getenv(name);
		struct hz_option_value *v = &hz_option_values[i];
		if (!s || !*s)
			continue;
		int rc = 0;
		switch (hz_options[i].type) {
		case HZ_OPT_BOOL: rc = parse_bool(s, 0, &v->num); break;
		case HZ_OPT_AUTO_BOOL: rc = parse_bool(s, 1, &v->num); break;
		case HZ_OPT_SIZE:
			rc = hz_parse_size(s, &v->size);
			break;
		case HZ_OPT_UINT:
			rc = (*s < '0' || *s > '9' || s[strspn(s, "0123456789")]) ? -1
										  : hz_parse_size(s, &v->size);
			break;
		case HZ_OPT_NAME: v->str = s; break;
		}
		if (rc) {
			hz_log("ignoring invalid ", name, "");
			bad++;
			continue;
		}
		v->set = 1;
	}
	return bad;
}
