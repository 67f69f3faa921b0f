/* arch/: the clearing engine. It owns the kernels (one instruction stream
 * over a whole extent), the small-size memset front ends, CPU and cache
 * detection, the size-to-kernel policy and the hinted clear. Each
 * architecture provides the functions marked "per arch" in arch/<cpu>/;
 * the build picks one directory, and nothing outside arch/ names a CPU.
 *
 * It stands on common.h and the OS primitives (os/os.h: page
 * size, file reads) and knows nothing of allocation, the exported ABI,
 * options or counters: it is configured through hz_engine_setup, and its
 * clears are counted by whoever calls them (obs/counters.c). */
#ifndef HZ_ARCH_H
#define HZ_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#pragma GCC visibility push(hidden)

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

/* The kernel table of this architecture, at most HZ_MAX_KERNELS long.
 * Entry 0 is the portable C kernel: the policy uses it before setup. */
#define HZ_MAX_KERNELS 16
extern const struct hz_kernel hz_kernels[];
extern const unsigned hz_nkernels;

/* The portable C kernel (arch/generic/fill_c.c), always built and tested. */
void *hz_fill_c(void *p, int c, size_t n);

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
	const char *source[HZ_CACHE_LEVELS]; /* "sysfs", "cpuid", "default", "configured" */
	size_t zva_block;            /* aarch64 DC ZVA block, 0 if prohibited */
	/* The size from which string stores beat vector stores on this CPU
	 * (its maker's fast strings), for the policy's first tier; 0: the L2's
	 * size, as measured on Zen 5. */
	size_t strings_from;
};

/* What setup detected (arch/engine.c). */
extern struct hz_cpu hz_cpu;

/* Fills vendor, features, cpuid (and zva_block) and the predicates' state.
 * Runs once, single-threaded, from hz_engine_setup. */
void hz_cpu_detect(struct hz_cpu *cpu);
/* A counter that only grows, at a steady rate (the time-stamp counter,
 * the virtual counter), read without a system call; 0 where there is
 * none, and then nothing is learnt (learn.c). */
uint64_t hz_arch_ticks(void);

/* ---- per arch: arch/<cpu>/front.c: the small-size memset front ends ---- */

/* Largest size the front ends fill inline; larger calls go to the policy. */
#define HZ_FRONT_MAX 16384

typedef void *(*hz_memset_fn)(void *p, int c, size_t n);
/* The front end best suited to this CPU (reads the CPU itself, so it works
 * before hz_cpu_detect). */
hz_memset_fn hz_memset_select(void);
/* The front end memset uses: one every CPU of the architecture runs until
 * setup sets it to the selected one. */
extern hz_memset_fn hz_memset_impl;
/* The exported memset is the architecture's widest front end (widest.h),
 * guarded by this flag: set once setup found that the CPU runs it; until
 * then, or on a CPU that does not, every call leaves before the first
 * instruction of the wide ISA (and goes through hz_memset_impl). */
extern int hz_memset_widest_ok;
/* The widest front end, unguarded: the one hz_memset_widest_ok names. */
void *hz_memset_widest_raw(void *p, int c, size_t n);
/* All front ends this CPU runs, for tests and benchmarks; returns count. */
unsigned hz_memset_variants(hz_memset_fn *fns, const char **names, unsigned max);

/* ---- arch/engine.c: the engine's state and its setup ---- */

/* The front end named name that this CPU runs, or NULL. */
hz_memset_fn hz_memset_front(const char *name);
/* The name of a front end, or "other" for a function that is none. */
const char *hz_memset_front_name(hz_memset_fn fn);
/* From now on memset's calls go through fn (glibc's, say): the widest
 * front end's flag is cleared and hz_memset_impl set. */
void hz_memset_divert(hz_memset_fn fn);
/* Any size: the policy's kernel for (c, n), uncounted. The front ends'
 * way out above HZ_FRONT_MAX. */
HZ_NOINLINE void *hz_fill_uncounted(void *p, int c, size_t n);
/* The library's own state cleared (its tables, a struct): never memset,
 * which a program may have interposed, and never counted as the
 * program's. */
static inline void hz_memzero(void *p, size_t n)
{
	hz_fill_uncounted(p, 0, n);
}

/* ---- arch/policy.c: size (and fill byte) to kernel ---- */

/* Up to HZ_TIERS size tiers above the front end; tier i serves sizes
 * below upto[i] (the last tier is unbounded). Each tier names the kernel for
 * non-zero and for zero fills. */
#define HZ_TIERS 3
struct hz_policy {
	size_t upto[HZ_TIERS];
	uint8_t fill[HZ_TIERS]; /* kernel index for c != 0 */
	uint8_t zero[HZ_TIERS]; /* kernel index for c == 0 */
	uint8_t near;           /* cache-allocating kernel of hinted clears */
	uint8_t learn;          /* from HZ_LEARN_MIN the tier 1/2 choice is learnt (learn.c) */
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
	int learn;               /* 0: never learn (learn.c): where the library cannot see the
				  * program turn the time-stamp counter off */
};

/* The policy in use: the portable kernel everywhere until setup. */
extern struct hz_policy hz_policy;

/* Index of the kernel named name that this CPU supports, or -1. */
int hz_kernel_find(const char *name);
int hz_kernel_usable(unsigned k);
/* Builds a policy for the detected caches and the configuration. Unknown or
 * unsupported kernel names are ignored; returns the number ignored. */
int hz_policy_build(struct hz_policy *pol, const struct hz_cpu *cpu,
			      const struct hz_policy_cfg *cfg);
static inline unsigned hz_policy_pick(const struct hz_policy *pol, int c, size_t n)
{
	int t = n < pol->upto[0] ? 0 : n < pol->upto[1] ? 1 : 2;
	return (unsigned char)c ? pol->fill[t] : pol->zero[t];
}

/* Runs kernel k over [p, p+n). */
static inline void hz_fill(unsigned k, void *p, int c, size_t n)
{
	hz_kernels[k].fill(p, c, n);
}

/* ---- arch/learn.c: the streaming tier's boundary, measured ---- */

/* From this size the policy (where it learns: hz_policy.learn, unless the
 * configuration fixed the kernels or the thresholds) takes, for each
 * half-octave size class, the kernel that has cost it least so far,
 * timed as the fills run, among its arms: tier 1's kernel (cached
 * stores), tier 2's, and for zero fills where tier 2's is a zero-only one
 * (CLZERO, DC ZVA) also tier 2's streaming stores. */
#define HZ_LEARN_MIN ((size_t)4 << 20)
#define HZ_LEARN_CLASSES 17 /* 4 MiB, 6 MiB, 8 MiB, 12 MiB, ... 1 GiB and up */
#define HZ_LEARN_ARMS 3
#define HZ_LEARN_KEPT 3 /* samples kept per arm; its cost is the least */
struct hz_learn {
	uint32_t calls;
	uint32_t last;             /* the arm of the class's last fill, plus 1; 0: none */
	uint32_t streak;           /* fills of that arm in a row before the last */
	uint32_t n[HZ_LEARN_ARMS]; /* samples of each arm */
	uint32_t kept[HZ_LEARN_ARMS][HZ_LEARN_KEPT]; /* its last ticks per KiB, sample n at n % KEPT */
};
/* A fill runs alone on the caller's thread or split over the helpers
 * (allocator/helpers.c): each way learns apart, for what splitting a
 * fill does to the cache each core sees is not what one core sees. */
enum { HZ_LEARN_ALONE, HZ_LEARN_SPLIT, HZ_LEARN_WAYS };
/* [way][0] zero fills, [way][1] the others. */
extern struct hz_learn hz_learn[HZ_LEARN_WAYS][2][HZ_LEARN_CLASSES];
/* The kernel of arm a for fill byte c (a >= hz_learn_arms(c): none). */
unsigned hz_learn_kernel(int c, int a);
int hz_learn_arms(int c);
/* Which arm a fill of (c, n) the way way takes. */
int hz_learn_arm(int way, int c, size_t n);
/* What it cost, in hz_arch_ticks. */
void hz_learn_record(int way, int c, size_t n, int arm, uint64_t ticks);
/* The kernel the class has found cheapest so far, taking no turn and
 * timing nothing: for a fill that is not the program's (the zeroer's).
 * The policy's rule until every arm has its samples. */
unsigned hz_learn_best(int way, int c, size_t n);
/* Fills [p, p+n) with the kernel the class has found cheaper (or is
 * trying), timed; returns the kernel's index. */
unsigned hz_learn_fill(void *p, int c, size_t n);
/* From now on nothing is learnt, and no fill reads the ticks: before the
 * calling thread may lose its time-stamp counter (strict seccomp,
 * PR_SET_TSC), where reading it would kill the thread. */
void hz_learn_stop(void);
/* Whether it was stopped: a policy built later does not learn either. */
int hz_learn_stopped(void);
/* Whether (c, n) is a fill the policy learns for. */
static inline int hz_learns(size_t n)
{
	return n >= HZ_LEARN_MIN && __atomic_load_n(&hz_policy.learn, __ATOMIC_RELAXED);
}
/* The kernel for a fill of (c, n) alone that is not timed itself: what
 * the class has learnt where the policy learns, else the policy's rule. */
static inline unsigned hz_policy_pick_learnt(int c, size_t n)
{
	return hz_learns(n) ? hz_learn_best(HZ_LEARN_ALONE, c, n) : hz_policy_pick(&hz_policy, c, n);
}

/* ---- arch/cache.c (portable: Linux sysfs and reconciliation) ---- */

/* Reads /sys/devices/system/cpu/cpu0/cache/ (or dir) without allocating. */
void hz_cache_read_sysfs(const char *dir, struct hz_cache_sizes *out);
/* Chooses each level's figure from the sources, sanity-checked, with a
 * default when none is plausible; records where each figure came from. */
void hz_cache_reconcile(struct hz_cpu *cpu);

/* ---- arch/engine.c: setup ---- */

struct hz_engine_cfg {
	struct hz_policy_cfg policy;
	size_t l2_size, l3_size; /* the caches to assume; 0: detected */
	const char *front;       /* the front end by name; NULL: the widest this CPU runs */
};
/* What setup could not take (and ignored). */
enum { HZ_ENGINE_BAD_FRONT = 1, HZ_ENGINE_BAD_KERNEL = 2 };
/* Detects the CPU and its caches (the first time), then selects the
 * front end and builds and publishes the policy for cfg. Returns the
 * HZ_ENGINE_BAD_* bits of what it ignored. Single-threaded, at start;
 * memset calls on other threads see either policy, both correct. */
int hz_engine_setup(const struct hz_engine_cfg *cfg);

/* ---- arch/clear.c: the hinted clear ---- */

/* A section of a hinted clear: [off, off+len) of the region, by kernel. */
struct hz_section {
	size_t off, len;
	unsigned kernel;
};
/* Splits a clear of n bytes at p, first touched at hint, into at most three
 * sections in execution order: right of the hint's neighbourhood, left of
 * it, then the neighbourhood (hint page and HZ_HINT_NEIGHBOURS pages each
 * side) with a cache-allocating kernel. A hint outside the region means no
 * hint: one section. Empty sections are left out. Returns the number of
 * sections. */
#define HZ_HINT_NEIGHBOURS 2
unsigned hz_clear_plan(const void *p, size_t n, const void *hint,
				 struct hz_section out[3]);
/* Zeroes [p, p+n) by that plan; the sections it ran are left in done
 * (for whoever counts them) and their number returned. */
unsigned hz_zero_hinted(void *p, size_t n, const void *hint, struct hz_section done[3]);

#pragma GCC visibility pop

#endif
