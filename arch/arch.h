/* arch/: the clearing engine's contract. Everything above this header is
 * architecture-neutral; each architecture provides the functions marked
 * "per arch" in arch/<cpu>/, and the build picks one directory. */
#ifndef HZ_ARCH_H
#define HZ_ARCH_H

#include <stddef.h>
#include <stdint.h>

#define HZ_HIDDEN __attribute__((visibility("hidden")))
#define HZ_EXPORT __attribute__((visibility("default")))
#define HZ_NOINLINE __attribute__((noinline))
#define hz_likely(x) __builtin_expect(!!(x), 1)
#define hz_unlikely(x) __builtin_expect(!!(x), 0)

/* A kernel fills n bytes at p with byte c and returns p. Kernels accept any
 * p, any n (0 included) and never touch a byte outside [p, p+n). */
typedef void *(*hz_fill_fn)(void *p, int c, size_t n);

enum {
	HZ_K_ZERO_ONLY = 1u << 0, /* fast only for c == 0 (CLZERO, DC ZVA); the
				     policy uses it for zero fills only */
	HZ_K_STREAMING = 1u << 1, /* does not allocate in cache; fenced after */
	/* Candidate for a policy tier (see struct hz_policy). Among the
	 * candidates the CPU supports, the policy takes the last in the table,
	 * so each architecture orders its table by preference. */
	HZ_K_TIER0 = 1u << 4,
	HZ_K_TIER1 = 1u << 5,
	HZ_K_TIER2 = 1u << 6,
};

struct hz_kernel {
	const char *name;
	int (*supported)(void); /* CPU predicate; NULL means always */
	hz_fill_fn fill;
	unsigned flags;
};

/* ---- per arch: arch/<cpu>/kernels.c ---- */

/* The kernel table of this architecture. Entry 0 is the portable C kernel:
 * the policy uses it before the CPU is detected. */
HZ_HIDDEN extern const struct hz_kernel hz_kernels[];
HZ_HIDDEN extern const unsigned hz_nkernels;

/* The portable C kernel (arch/generic/fill_c.c), always built and tested. */
HZ_HIDDEN void *hz_fill_c(void *p, int c, size_t n);

/* ---- per arch: arch/<cpu>/cpu.c ---- */

enum { HZ_CACHE_L1D, HZ_CACHE_L2, HZ_CACHE_L3, HZ_CACHE_LEVELS };

/* Sizes of one cache instance (what one core can use), in bytes; 0 when a
 * source does not report it. */
struct hz_cache_sizes {
	size_t size[HZ_CACHE_LEVELS];
};

struct hz_cpu {
	char vendor[16];
	char features[160];          /* space-separated, for diagnostics */
	struct hz_cache_sizes cpuid; /* what the CPU itself reports */
	struct hz_cache_sizes sysfs; /* what the kernel reports */
	struct hz_cache_sizes cache; /* the reconciled figures in use */
	const char *source[HZ_CACHE_LEVELS]; /* "sysfs", "cpuid", "default", "env" */
	size_t zva_block;            /* aarch64 DC ZVA block, 0 if prohibited */
};

/* Fills vendor, features, cpuid (and zva_block) and the predicates' state.
 * Runs once, single-threaded, from the library's initialisation. */
HZ_HIDDEN void hz_cpu_detect(struct hz_cpu *cpu);

/* The small-size memset front end best suited to this CPU (reads the CPU
 * itself, so it works before hz_cpu_detect). */
typedef void *(*hz_memset_fn)(void *p, int c, size_t n);
HZ_HIDDEN hz_memset_fn hz_memset_select(void);
/* The front end memset uses: one every CPU of the architecture runs until
 * initialisation sets it to hz_memset_select()'s. */
HZ_HIDDEN extern hz_memset_fn hz_memset_impl;
/* memset is the architecture's widest front end (widest.h), guarded by
 * this flag: set once initialisation found that the CPU runs it; until
 * then, or on a CPU that does not, every call leaves through
 * hz_memset_exit. */
HZ_HIDDEN extern int hz_memset_widest_ok;
/* memset's way out of the front end: the policy, or, without the flag,
 * the front end in hz_memset_impl. */
HZ_HIDDEN HZ_NOINLINE void *hz_memset_exit(void *p, int c, size_t n);
/* The widest front end, unguarded: the one hz_memset_widest_ok names. */
HZ_HIDDEN void *hz_memset_widest_raw(void *p, int c, size_t n);
/* All front ends this CPU runs, for tests and benchmarks; returns count. */
HZ_HIDDEN unsigned hz_memset_variants(hz_memset_fn *fns, const char **names, unsigned max);

/* ---- arch/cache.c (portable: Linux sysfs and reconciliation) ---- */

/* Reads /sys/devices/system/cpu/cpu0/cache/ without allocating. */
HZ_HIDDEN void hz_cache_read_sysfs(const char *dir, struct hz_cache_sizes *out);
/* Chooses each level's figure from the sources, sanity-checked, with a
 * default when none is plausible; records where each figure came from. */
HZ_HIDDEN void hz_cache_reconcile(struct hz_cpu *cpu);

/* ---- arch/policy.c: size (and fill byte) to kernel ---- */

/* Up to HZ_TIERS size tiers above the small front end; tier i serves sizes
 * below upto[i] (the last tier is unbounded). Each tier names the kernel for
 * non-zero and for zero fills. */
#define HZ_TIERS 3
struct hz_policy {
	size_t upto[HZ_TIERS];
	uint8_t fill[HZ_TIERS]; /* kernel index for c != 0 */
	uint8_t zero[HZ_TIERS]; /* kernel index for c == 0 */
	uint8_t near;           /* cache-allocating kernel of hinted clears */
};

struct hz_policy_cfg {
	size_t medium_threshold; /* 0: derived from the caches */
	size_t nt_threshold;     /* 0: derived from the caches */
	int use_streaming;       /* -1 auto, 0 never, 1 allowed */
	int use_clzero;          /* -1 auto, 0 never, 1 allowed (zero-only kernels) */
	const char *force;       /* kernel name for every tier, or NULL */
	const char *small;       /* kernel for tier 0, or NULL */
	const char *medium;      /* kernel for tier 1, or NULL */
	const char *large;       /* kernel for tier 2, or NULL */
	const char *near;        /* kernel of hinted clears' neighbourhood, or NULL */
};

HZ_HIDDEN extern struct hz_policy hz_policy;
HZ_HIDDEN extern size_t hz_page_size;
HZ_HIDDEN extern struct hz_cpu hz_cpu;

/* Index of the kernel named name that this CPU supports, or -1. */
HZ_HIDDEN int hz_kernel_find(const char *name);
HZ_HIDDEN int hz_kernel_usable(unsigned k);
/* Builds a policy for the detected caches and the configuration. Unknown or
 * unsupported kernel names are ignored; returns the number ignored. */
HZ_HIDDEN int hz_policy_build(struct hz_policy *pol, const struct hz_cpu *cpu,
			      const struct hz_policy_cfg *cfg);
static inline unsigned hz_policy_pick(const struct hz_policy *pol, int c, size_t n)
{
	int t = n < pol->upto[0] ? 0 : n < pol->upto[1] ? 1 : 2;
	return (unsigned char)c ? pol->fill[t] : pol->zero[t];
}

/* ---- arch/dispatch.c ---- */

/* Largest size the front ends handle inline; larger calls go to the policy. */
#define HZ_SMALL_MAX 16384
/* memset above HZ_SMALL_MAX: picks the tier's kernel and counts the call. */
HZ_HIDDEN HZ_NOINLINE void *hz_memset_large(void *p, int c, size_t n);
/* Runs kernel k over [p, p+n), counting large calls. */
HZ_HIDDEN void hz_fill_with(unsigned k, void *p, int c, size_t n);

/* Counters of calls that reach the policy with at least HZ_COUNT_MIN bytes
 * (below that an atomic add would cost more than it tells). */
#define HZ_COUNT_MIN ((size_t)64 << 10)
#define HZ_MAX_KERNELS 16
struct hz_counters_raw {
	uint64_t calls[HZ_MAX_KERNELS];
	uint64_t bytes[HZ_MAX_KERNELS];
	uint64_t memset_chk_calls;
	uint64_t hinted_calls;
	uint64_t memset_large_calls, memset_large_bytes; /* memset above HZ_SMALL_MAX */
};
HZ_HIDDEN extern struct hz_counters_raw hz_counters_raw;

/* ---- arch/clear.c: the hinted clear ---- */

/* A section of a hinted clear: [off, off+len) of the region, by kernel. */
struct hz_section {
	size_t off, len;
	unsigned kernel;
};
/* Splits a clear of n bytes at p, first touched at hint, into at most three
 * sections in execution order: right of the hint's neighbourhood, left of
 * it, then the neighbourhood (hint page and 2 pages each side) with a
 * cache-allocating kernel. A hint outside the region means no hint: one
 * section. Empty sections are left out. Returns the number of sections. */
HZ_HIDDEN unsigned hz_clear_plan(const void *p, size_t n, const void *hint,
				 struct hz_section out[3]);
#define HZ_HINT_NEIGHBOURS 2

/* ---- library initialisation (preload/init.c) ---- */
HZ_HIDDEN void hz_init(void);

#endif
