/* The option table and its loader (options.c). README.md's option
 * reference is generated from this table (scripts/options-doc.sh) and a
 * test keeps the two equal. */
#include <stdio.h>
#include <string.h>

#include "../allocator/allocator.h"
#include "../os/os.h"
#include "../arch/arch.h"
#include "preload.h"

#define NUM(v) {.num = (v)}
#define SIZE(v) {.size = (v)}
#define NAME(v) {.str = (v)}
#define FRAC(v) {.frac = (v)}
#define NONE {0}

const struct hz_option_desc hz_options[HZ_OPT_COUNT] = {
	[HZ_OPT_VERBOSE] = {"VERBOSE", HZ_OPT_BOOL, NUM(0), NULL,
			    "print the detected CPU, caches and kernel policy to stderr at start"},
	[HZ_OPT_MODE] = {"MODE", HZ_OPT_NAME, NAME("on"), NULL,
			 "off forwards memset and the whole malloc family to glibc (read at the first allocation); given, it overrides PROCESS_AB"},
	[HZ_OPT_KERNEL] = {"KERNEL", HZ_OPT_NAME, NONE, "(policy)",
			   "use this kernel for every size above 16 KiB (names: see Kernels in docs/design.md)"},
	[HZ_OPT_KERNEL_SMALL] = {"KERNEL_SMALL", HZ_OPT_NAME, NONE, "(policy)",
				 "kernel for sizes above 16 KiB and below MEDIUM_THRESHOLD"},
	[HZ_OPT_KERNEL_MEDIUM] = {"KERNEL_MEDIUM", HZ_OPT_NAME, NONE, "(policy)",
				  "kernel from MEDIUM_THRESHOLD to below NT_THRESHOLD"},
	[HZ_OPT_KERNEL_LARGE] = {"KERNEL_LARGE", HZ_OPT_NAME, NONE, "(policy)",
				 "kernel from NT_THRESHOLD up"},
	[HZ_OPT_KERNEL_NEAR] = {"KERNEL_NEAR", HZ_OPT_NAME, NONE, "(policy)",
				"kernel for the hint's neighbourhood in hinted clears (not a streaming one)"},
	[HZ_OPT_FRONT] = {"FRONT", HZ_OPT_NAME, NONE, "(widest)",
			  "small-size front end of memset: front_avx512, front_avx2, front_sse2 (x86-64)"},
	[HZ_OPT_MEDIUM_THRESHOLD] = {"MEDIUM_THRESHOLD", HZ_OPT_SIZE, NONE, "L2 (16K on Intel)",
				     "size from which string stores replace vector stores"},
	[HZ_OPT_NT_THRESHOLD] = {"NT_THRESHOLD", HZ_OPT_SIZE, NONE, "L3, then learnt",
				 "size from which streaming stores (or CLZERO for zero) are used; unset, from 4M each size class times both and keeps the faster, trying the other now and then"},
	[HZ_OPT_STREAMING] = {"STREAMING", HZ_OPT_AUTO_BOOL, NUM(-1), NULL,
			      "0 never uses streaming stores or CLZERO: large sizes stay temporal"},
	[HZ_OPT_CLZERO] = {"CLZERO", HZ_OPT_AUTO_BOOL, NUM(-1), NULL,
			   "0 never uses zero-only kernels (CLZERO, DC ZVA)"},
	[HZ_OPT_L2_SIZE] = {"L2_SIZE", HZ_OPT_SIZE, NONE, "detected",
			    "L2 cache size (per core) to assume, overriding detection"},
	[HZ_OPT_L3_SIZE] = {"L3_SIZE", HZ_OPT_SIZE, NONE, "detected",
			    "L3 cache size (per core complex) to assume, overriding detection"},
	[HZ_OPT_DIRTY_MAX] = {"DIRTY_MAX", HZ_OPT_SIZE, SIZE((uint64_t)256 << 20), NULL,
			      "free memory the process's arenas keep for reuse, together; past it they release whole 2 MiB blocks, in one batch, until they hold a quarter of it less (a block realloc moved to a larger one goes back at once, unless a block of its size was taken before)"},
	[HZ_OPT_DIRTY_DECAY_MS] = {"DIRTY_DECAY_MS", HZ_OPT_UINT, SIZE(10000), NULL,
				   "at the end of each window of this length, the free memory no allocation needed during it (its low-water mark) is released; 0 releases at once"},
	[HZ_OPT_LARGE_MIN] = {"LARGE_MIN", HZ_OPT_SIZE, SIZE((uint64_t)1 << 20), NULL,
			      "blocks from this size up (at least 16K) live in the hugepage arenas; smaller ones in the small engine (SMALL)"},
	[HZ_OPT_SMALL] = {"SMALL", HZ_OPT_NAME, NAME("auto"), NULL,
			  "the small blocks' engine: auto (jemalloc, or next under an address-space limit: RLIMIT_AS or RLIMIT_DATA set at start), jemalloc (built in), or next: the next allocator in the link order, the program's own (glibc's, or a jemalloc it links) or one preloaded after this library (LD_PRELOAD=\"libhugezero.so.0 libmimalloc.so.2\"); read at the first allocation, the shared library only"},
	[HZ_OPT_SMALL_CACHE] = {"SMALL_CACHE", HZ_OPT_BOOL, NUM(1), NULL,
				"0 leaves blocks up to 1 MiB to jemalloc's own thread caches: no thread cache of hugezero's in front of it (per thread, a stack of free blocks per size class to 64 KiB, from a thread's 16384th call on, or once its calls asked for 256 KiB, or from its 256th once the process has started the cache, handed between threads a batch at a time; above, the last block freed of each class, up to 1 MiB in all)"},
	[HZ_OPT_THP] = {"THP", HZ_OPT_BOOL, NUM(1), NULL,
			"0 does not ask for transparent huge pages (MADV_HUGEPAGE) for the arenas' memory"},
	[HZ_OPT_FRESH] = {"FRESH", HZ_OPT_NAME, NAME("auto"), NULL,
			  "fresh memory's pages: auto (huge while the recent huge pages' first touches, timed as the program runs, cost no more than 512 small faults, measured every 10 s), huge, or small"},
	[HZ_OPT_HUGETLB] = {"HUGETLB", HZ_OPT_BOOL, NUM(0), NULL,
			    "1 takes 64 MiB chunks from the hugetlb pool (MAP_HUGETLB) while it has 32 free pages; counted fallback to THP"},
	[HZ_OPT_CALLOC_DIRTY] = {"CALLOC_DIRTY", HZ_OPT_NAME, NAME("clear"), NULL,
				 "how calloc zeroes recycled dirty pages: clear (in place, hinted) or release (MADV_DONTNEED, refault)"},
	[HZ_OPT_BACKGROUND] = {"BACKGROUND", HZ_OPT_BOOL, NUM(1), NULL,
				"a thread of the process (SCHED_IDLE, started at a large free or calloc, ended after 1 s idle) clears freed large blocks and keeps the reserve; 0: none"},
	[HZ_OPT_RESERVE] = {"RESERVE", HZ_OPT_SIZE, SIZE((uint64_t)32 << 20), NULL,
			    "bytes of fresh pages the background thread keeps in memory and zero, up to what was taken fresh since the last decay and half of DIRTY_MAX, and only below the process's peak resident size"},
	[HZ_OPT_POPULATE] = {"POPULATE", HZ_OPT_AUTO_BOOL, NUM(-1), NULL,
			     "fresh large blocks (from 2 MiB) faulted in by one call per 2 MiB step (MADV_POPULATE_WRITE) instead of a fault per page: auto where the program touched most pages of its recent blocks of that size class (read with mincore; never near a memory cgroup's limit), 1 always, 0 never"},
	[HZ_OPT_THREADS] = {"THREADS", HZ_OPT_UINT, SIZE(0), "(CPU set)",
			    "threads that share a fresh block's population, a memset in an arena block, or calloc's clear of a recycled block, from 64 MiB: the caller and THREADS - 1 helpers (at most 16) at SCHED_IDLE, offered the work only while a core is idle; 1: the caller alone"},
	[HZ_OPT_HARDENED] = {"HARDENED", HZ_OPT_BOOL, NUM(0), NULL,
			     "1: every block's bytes are zero before free returns (large ones known zero after, so calloc clears nothing recycled), a guard after every large block (from 2 MiB whole huge pages and a 2 MiB guard), small blocks held in a quarantine where a second free, a realloc of a freed block or a write after free is caught (abort); read at the first allocation"},
	[HZ_OPT_STATS] = {"STATS", HZ_OPT_NAME, NONE, "(none)",
			  "write the counters at exit to stderr, or to this path (%p: the pid; else .PID appended, before a final .prom), mode 0600 (0644 in the prometheus format, for a collector of another user), no symlinks"},
	[HZ_OPT_STATS_FORMAT] = {"STATS_FORMAT", HZ_OPT_NAME, NAME("text"), NULL,
				 "the report's format: text, json or prometheus (text exposition format)"},
	[HZ_OPT_STATS_INTERVAL_MS] = {"STATS_INTERVAL_MS", HZ_OPT_UINT, SIZE(0), NULL,
				      "also rewrite the report every this many ms, from a thread started only then (a forked child starts its own at its first large call an interval later); each rewrite replaces the file at once (a temporary file renamed over it); in the prometheus format the file is removed at exit, and files of this path left by processes gone are removed"},
	[HZ_OPT_LABELS] = {"LABELS", HZ_OPT_NAME, NONE, "(none)",
			   "labels on every sample of the prometheus format, name=value,... (e.g. service=redis,region=eu); not pid, mode, op, class, arm, le, bound, rank, site, job or instance"},
	[HZ_OPT_AB] = {"AB", HZ_OPT_FRACTION, NONE, "(off)",
		       "A/B arms: this fraction (0 to 1) of eligible calls goes to arm A (glibc's way), the rest to arm B (hugezero's)"},
	[HZ_OPT_AB_SEED] = {"AB_SEED", HZ_OPT_UINT, NONE, "(time)",
			    "seed of the arms' random assignment (unset: the clock's second) and of PROCESS_AB's draw (unset: fresh random bits)"},
	[HZ_OPT_AB_MIN] = {"AB_MIN", HZ_OPT_SIZE, SIZE((uint64_t)64 << 10), NULL,
			   "memset calls and zeroed arena blocks (calloc, mallocx with MALLOCX_ZERO) from this size (above 16K) take part in the arms"},
	[HZ_OPT_PROCESS_AB] = {"PROCESS_AB", HZ_OPT_FRACTION, FRAC(0), NULL,
			       "A/B of whole processes: each process runs in the off mode (as MODE=off: glibc's memset and malloc family) with this probability (0 to 1), else on; drawn once at start, from AB_SEED when given (the same seed, the same mode), else at random; a forked child keeps its parent's mode; every report states the mode (the mode label in the prometheus format) beside the process's minor faults, CPU time and resident sizes, which `hugezero fleet` compares"},
	[HZ_OPT_CALLSITES] = {"CALLSITES", HZ_OPT_UINT, SIZE(0), NULL,
			      "sample the stack of 1 in this many large blocks (every allocating form) and large memset calls (libunwind); 0: off"},
};

static struct hz_option_value values[HZ_OPT_COUNT];
static int loaded;

const struct hz_option_value *hz_option(enum hz_option o)
{
	return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE) ? &values[o] : &hz_options[o].def;
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

int hz_parse_fraction(const char *s, double *out)
{
	double v = 0, scale = 1;
	int digits = 0, exp = 0, neg = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		v = v * 10 + (*p - '0'); /* too many digits: inf, refused below */
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			v += (*p - '0') * (scale /= 10);
	if (digits && (*p == 'e' || *p == 'E')) { /* as a float's repr writes 1e-05 */
		neg = *++p == '-';
		p += *p == '-' || *p == '+';
		if (*p < '0' || *p > '9')
			return -1;
		for (; *p >= '0' && *p <= '9'; p++)
			exp = exp < 1000 ? exp * 10 + (*p - '0') : exp;
	}
	for (; exp > 0; exp--)
		v = neg ? v / 10 : v * 10;
	if (*p || !digits || !(v <= 1))
		return -1;
	*out = v;
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

/* s as a value of option o into v; 0, or -1 when it is not one. */
static int parse(enum hz_option o, const char *s, struct hz_option_value *v)
{
	size_t n;
	switch (hz_options[o].type) {
	case HZ_OPT_BOOL:
		return parse_bool(s, 0, &v->num);
	case HZ_OPT_AUTO_BOOL:
		return parse_bool(s, 1, &v->num);
	case HZ_OPT_UINT:
		if (s[strspn(s, "0123456789")])
			return -1; /* digits only, then read as a size */
		__attribute__((fallthrough));
	case HZ_OPT_SIZE:
		if (hz_parse_size(s, &n))
			return -1;
		v->size = n;
		return 0;
	case HZ_OPT_NAME:
		v->str = s;
		return 0;
	case HZ_OPT_FRACTION:
		return hz_parse_fraction(s, &v->frac);
	}
	return -1;
}

int hz_options_load(void)
{
	int bad = 0;
	for (int i = 0; i < HZ_OPT_COUNT; i++) {
		char name[64] = "HUGEZERO_";
		size_t len = strlen(hz_options[i].name);
		memcpy(name + 9, hz_options[i].name, len + 1);
		const char *s = hz_os_getenv(name);
		struct hz_option_value v = hz_options[i].def;
		if (s && *s && parse((enum hz_option)i, s, &v)) {
			hz_os_log("ignoring invalid ", name, NULL);
			bad++;
			v = hz_options[i].def;
		} else if (s && *s) {
			v.given = 1;
		}
		values[i] = v;
	}
	__atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
	return bad;
}

const char *hz_option_default_text(enum hz_option o, char *buf, size_t cap)
{
	const struct hz_option_desc *d = &hz_options[o];
	uint64_t v = d->def.size;
	if (d->shown)
		return d->shown;
	switch (d->type) {
	case HZ_OPT_AUTO_BOOL:
		if (d->def.num < 0)
			return "auto";
		__attribute__((fallthrough));
	case HZ_OPT_BOOL:
		snprintf(buf, cap, "%d", d->def.num);
		break;
	case HZ_OPT_SIZE: {
		static const char units[] = "\0KMG";
		int u = 0;
		while (u < 3 && v && !(v & 1023))
			v >>= 10, u++;
		snprintf(buf, cap, "%llu%.1s", (unsigned long long)v, &units[u]);
		break;
	}
	case HZ_OPT_UINT:
		snprintf(buf, cap, "%llu", (unsigned long long)v);
		break;
	case HZ_OPT_NAME:
		snprintf(buf, cap, "%s", d->def.str ? d->def.str : "");
		break;
	case HZ_OPT_FRACTION:
		snprintf(buf, cap, "%g", d->def.frac);
		break;
	}
	return buf;
}

#define V(o) hz_option(HZ_OPT_##o)

void hz_options_start_engine(int learn)
{
	struct hz_engine_cfg cfg = {
		.policy = {
			.medium_threshold = V(MEDIUM_THRESHOLD)->size,
			.nt_threshold = V(NT_THRESHOLD)->size,
			.use_streaming = V(STREAMING)->num,
			.use_clzero = V(CLZERO)->num,
			.force = V(KERNEL)->str,
			.small = V(KERNEL_SMALL)->str,
			.medium = V(KERNEL_MEDIUM)->str,
			.large = V(KERNEL_LARGE)->str,
			.near = V(KERNEL_NEAR)->str,
			.learn = learn,
		},
		.l2_size = V(L2_SIZE)->size,
		.l3_size = V(L3_SIZE)->size,
		.front = V(FRONT)->str,
	};
	int bad = hz_engine_setup(&cfg);
	if (bad & HZ_ENGINE_BAD_FRONT)
		hz_os_log("ignoring HUGEZERO_FRONT: unknown or unsupported on this CPU: ", cfg.front, NULL);
	if (bad & HZ_ENGINE_BAD_KERNEL)
		hz_os_log("ignoring a kernel name that is unknown or unsupported on this CPU", NULL, NULL);
}

size_t hz_options_start_arenas(void)
{
	size_t large_min = V(LARGE_MIN)->size;
	if (large_min < HZ_JE_LARGE_MIN) {
		hz_os_log("ignoring HUGEZERO_LARGE_MIN below 16K", NULL, NULL);
		large_min = hz_options[HZ_OPT_LARGE_MIN].def.size;
	}
	if (hz_page_size != HZ_PAGE)
		large_min = SIZE_MAX;
	const char *dirty = V(CALLOC_DIRTY)->str;
	if (strcmp(dirty, "clear") && strcmp(dirty, "release"))
		hz_os_log("ignoring HUGEZERO_CALLOC_DIRTY: not clear or release: ", dirty, NULL);
	static const char *const fresh_names[] = {[HZ_FRESH_AUTO] = "auto", [HZ_FRESH_HUGE] = "huge",
						  [HZ_FRESH_SMALL] = "small"};
	const char *fresh_name = V(FRESH)->str;
	enum hz_fresh_mode fresh = HZ_FRESH_AUTO;
	for (int m = 0; m < 3; m++)
		if (!strcmp(fresh_name, fresh_names[m]))
			fresh = (enum hz_fresh_mode)m;
	if (fresh == HZ_FRESH_AUTO && strcmp(fresh_name, "auto"))
		hz_os_log("ignoring HUGEZERO_FRESH: not auto, huge or small: ", fresh_name, NULL);
	struct hz_large_cfg cfg = {
		.dirty_max = V(DIRTY_MAX)->size,
		.dirty_decay_ms = V(DIRTY_DECAY_MS)->size,
		.thp = V(THP)->num,
		.fresh = fresh,
		.hugetlb = V(HUGETLB)->num,
		.calloc_release = !strcmp(dirty, "release"),
		.background = (int)V(BACKGROUND)->num,
		.reserve = V(RESERVE)->size,
		.populate = (int)V(POPULATE)->num,
		.threads = (unsigned)(V(THREADS)->size < 1024 ? V(THREADS)->size : 1024),
		.hardened = (int)V(HARDENED)->num,
	};
	hz_large_setup(&cfg);
	return large_min;
}

void hz_options_setup(void)
{
	hz_os_init();
	hz_options_load();
	hz_options_start_engine(0);
	hz_options_start_arenas();
}
