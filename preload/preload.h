/* preload/preload.h: the exported room's one header, its files' functions
 * bottom-up, one section a file (docs/layers.txt): glibc's versioned
 * names; the one option table; the lookups only the shared library makes
 * (dynamic.c, or static.c in libhugezero.a); the allocator's start and
 * the mode; HUGEZERO_MODE=off's calls; the report's writer (stats); the
 * slow paths every allocating form shares, beside the fast paths; the
 * library's one set of fork handlers; HUGEZERO_VERBOSE; the constructor.
 * Above them, the exported ABI: memset.c, malloc.c, cxx.c, jemalloc_api.c,
 * api.c and atfork.c. Every other room lies below this one. */
#ifndef HZ_PRELOAD_H
#define HZ_PRELOAD_H

#include <stddef.h>
#include <stdint.h>
#include <malloc.h>

#include "../arch/common.h"
#include "../obs/obs.h"
#include "../allocator/allocator.h"

/* What the library exports: the interposed ABI and the hz_ API (the
 * version script hugezero.map lists them). */
#define HZ_EXPORT __attribute__((visibility("default")))

/* ---- glibc's names (here only) ---- */
/* glibc's own allocator: the baseline of HUGEZERO_MODE=off. Its core entry
 * points are reached without dlsym, through glibc's versioned __libc_*
 * names (the library exports none of them, so these references cannot
 * bind back to it); they are weak, NULL where no shared glibc is there (a
 * static program). HZ_GLIBC_BASE, glibc's base symbol version on this
 * architecture, comes from the build. */

#define HZ_GLIBC_REF(local, name) __asm__(".symver " #local "," #name "@" HZ_GLIBC_BASE)
HZ_GLIBC_REF(hz_glibc_malloc, __libc_malloc);
HZ_GLIBC_REF(hz_glibc_calloc, __libc_calloc);
HZ_GLIBC_REF(hz_glibc_realloc, __libc_realloc);
HZ_GLIBC_REF(hz_glibc_free, __libc_free);
HZ_GLIBC_REF(hz_glibc_memalign, __libc_memalign);

extern void *hz_glibc_malloc(size_t size) __attribute__((weak));
extern void *hz_glibc_calloc(size_t n, size_t size) __attribute__((weak));
extern void *hz_glibc_realloc(void *p, size_t size) __attribute__((weak));
extern void hz_glibc_free(void *p) __attribute__((weak));
extern void *hz_glibc_memalign(size_t align, size_t size) __attribute__((weak));

#pragma GCC visibility push(hidden)

/* ---- options.c ---- */
/* The library's configuration: one table of HUGEZERO_* environment
 * variables, each with its type, its default and a line of documentation
 * (the README's reference and scripts' are generated from it), read once
 * at start; never in setuid programs. Every default is stated here and
 * only here: the rooms below are configured from hz_option(). */

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
	HZ_OPT_SMALL_CACHE,
	HZ_OPT_THP,
	HZ_OPT_FRESH,
	HZ_OPT_HUGETLB,
	HZ_OPT_CALLOC_DIRTY,
	HZ_OPT_BACKGROUND,
	HZ_OPT_RESERVE,
	HZ_OPT_POPULATE,
	HZ_OPT_THREADS,
	HZ_OPT_HARDENED,
	HZ_OPT_STATS,
	HZ_OPT_STATS_FORMAT,
	HZ_OPT_STATS_INTERVAL_MS,
	HZ_OPT_LABELS,
	HZ_OPT_AB,
	HZ_OPT_AB_SEED,
	HZ_OPT_AB_MIN,
	HZ_OPT_PROCESS_AB,
	HZ_OPT_CALLSITES,
	HZ_OPT_COUNT
};

enum hz_option_type {
	HZ_OPT_BOOL,      /* 0 or 1 (also off/on, no/yes, false/true) */
	HZ_OPT_AUTO_BOOL, /* auto (-1), 0 or 1 */
	HZ_OPT_SIZE,      /* bytes: digits and an optional K, M or G */
	HZ_OPT_UINT,      /* digits */
	HZ_OPT_NAME,      /* a word, as given */
	HZ_OPT_FRACTION,  /* a number from 0 to 1: 0.25, 1, .5, 1e-3 */
};

/* An option's value: the table's default until the environment gives a
 * valid one. */
struct hz_option_value {
	int given;       /* from the environment */
	int num;         /* BOOL, AUTO_BOOL */
	uint64_t size;   /* SIZE, UINT */
	const char *str; /* NAME (into the environment or the table); NULL: none */
	double frac;     /* FRACTION */
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
/* Parses a fraction from 0 to 1 written as a decimal number ("0.25", "1",
 * ".5", "1e-05"): 0 and the value in *out, or -1 on anything else. No
 * libc: the options are read at the first malloc. */
int hz_parse_fraction(const char *s, double *out);
/* The default as the reference shows it, into buf. */
const char *hz_option_default_text(enum hz_option o, char *buf, size_t cap);

/* The rooms started from the options, once loaded; a value a room cannot
 * take is named on stderr (and its default used, or the room's own
 * choice). The engine (hz_engine_setup), learning its large fills'
 * kernel where learn is set (arch/learn.c): only where the library sees
 * the program's prctl (hz_sees_jumps), which may take the time-stamp
 * counter away: */
void hz_options_start_engine(int learn);
/* The arenas (hz_large_setup); returns from which size blocks go to them:
 * SIZE_MAX where pages are not 4 KiB, which the arenas assume. */
size_t hz_options_start_arenas(void);
/* The OS primitives, the options, the engine and the arenas, as the
 * library starts them, for programs that link the rooms without it: the
 * unit tests and the benchmarks. */
void hz_options_setup(void);

/* ---- dynamic.c, or static.c ---- */
/* What only a dynamically linked library looks up: glibc's own functions
 * (the rest of the baseline of HUGEZERO_MODE=off, and the A/B arms'
 * memset) and libunwind (call sites). libhugezero.so links dynamic.c;
 * libhugezero.a links static.c, which finds neither: a static program
 * has no glibc to forward to, and linking dlopen into it only warns. Not
 * during bootstrap: dlopen and dlsym may allocate. */

/* glibc's own definition of name, read from libc.so.6's symbol table (its
 * GNU hash table, through dl_iterate_phdr), without dlsym, which may
 * allocate; NULL when there is none. */
void *hz_glibc_symbol(const char *name);
/* Whether the program's jumps (longjmp and its kin) pass through the
 * library (invisible.c, in libhugezero.so): only then is a memset split
 * over the helpers, whose work must end before a signal handler's jump
 * out of it. 0 in libhugezero.a. */
extern const int hz_sees_jumps;
/* The next allocator after this library's in the link order: the first
 * module after it (a library preloaded after it, then those the program
 * links; never the program, which comes first) that defines names[0] as
 * a function; out[i] is names[i]'s definition in that same module, NULL
 * where it has none, so that one allocator's functions are never mixed
 * with another's. Read from the modules' GNU hash tables like
 * hz_glibc_symbol: no dlsym, no allocation, so it serves before the
 * allocator has started; a module with no GNU hash table is passed over,
 * and one whose names[0] is not a plain function (an IFUNC) ends the
 * search. 0, or -1 when there is none (out all NULL). */
int hz_next_family(const char *const *names, void **out, int n);
/* The definition of name in the loaded library soname, cached in *cache;
 * NULL when there is none (or the library is not loaded). */
void *hz_lib_lookup(void **cache, const char *soname, const char *name);
/* glibc's definition of name (libc.so.6's), the same way. */
static inline void *hz_glibc_lookup(void **cache, const char *name)
{
	return hz_lib_lookup(cache, "libc.so.6", name);
}
/* libunwind's unw_backtrace, from libunwind opened privately (RTLD_LOCAL:
 * its _Unwind_Backtrace and backtrace never become the program's); NULL
 * when it is not installed. */
hz_backtrace_fn hz_unwind_open(void);

/* ---- start.c ---- the allocator's start, which the first call into the
 * allocator makes when it comes before the library's constructor (or the
 * constructor, if it comes first): the options read, the mode decided
 * (HUGEZERO_MODE=off takes effect only where glibc's allocator is there to
 * forward to), the arenas configured. Allocates nothing; idempotent. */

HZ_NOINLINE void hz_allocator_start(void);
/* Whether hz_allocator_start has run. */
extern int hz_allocator_started;
/* 1 when memset and the malloc family forward to glibc; set once, by
 * hz_allocator_start, before the allocator hands out a block: from
 * HUGEZERO_MODE when it is given, else drawn with HUGEZERO_PROCESS_AB's
 * probability (then hz_mode_drawn is 1). */
extern int hz_mode_off, hz_mode_drawn;

/* ---- off.c ---- HUGEZERO_MODE=off, where memset and the whole malloc
 * family forward to glibc, so one binary compares process against
 * process. The mode itself is decided at the start (start.c); these are
 * its ways for the calls glibc's allocator has no core entry point for:
 * glibc's own function of that name, looked up once (dynamic.c), and
 * the allocating forms' way (alloc.c's slow paths come here first). */

size_t hz_off_malloc_usable_size(void *p);
int hz_off_malloc_trim(size_t pad);
struct mallinfo2 hz_off_mallinfo2(void);
void hz_off_malloc_stats(void);
int hz_off_mallopt(int param, int value);
/* Every allocating form on glibc's blocks, with jemalloc's flags
 * (alignment and zeroing honoured; sizes as glibc gives them; nothing
 * resized in place). */
HZ_NOINLINE void *hz_off_mallocx(size_t size, int flags);
HZ_NOINLINE void *hz_off_rallocx(void *p, size_t size, int flags);

/* ---- stats.c ---- HUGEZERO_STATS, the report written: every room's
 * figures walked into obs/'s report (report.c) on demand, from the
 * interval's thread and at exit; a figure found by name (hz_stat). */

/* Starts the interval's thread when one was set up (hz_report_setup):
 * 0, or an error number. */
int hz_stats_start(void);
/* The report now (hz_stats_dump): 0, or -1 with errno. */
int hz_stats_write(const char *path, const char *format);
/* The figure called name into *value: 0, or ENOENT. */
int hz_stats_find(const char *name, uint64_t *value);

/* Ends the interval's thread, waited for at most bound_ns: 1 when it
 * was running, else 0. Unless forever, it starts again at the next large call
 * (hz_stats_child_check). */
int hz_stats_quiesce(int forever, uint64_t bound_ns);
HZ_NOINLINE void hz_stats_child_tick(void);
/* On the large paths (a load and a branch): starts the interval thread
 * of a forked child, or again after a quiesce, once it is due
 * (report.c). */
static inline void hz_stats_child_check(void)
{
	if (hz_unlikely(__atomic_load_n(&hz_report_child_pending, __ATOMIC_RELAXED)))
		hz_stats_child_tick();
}

/* ---- alloc.c ---- the allocator's paths, fast and slow side by side.
 * The fast paths of malloc and free, shared by glibc's names (malloc.c),
 * C++'s (cxx.c) and jemalloc's (jemalloc_api.c): one compare each, then
 * jemalloc's own fast path. Everything else (large blocks, the
 * allocator's start, HUGEZERO_MODE=off, counting, the arms) is behind the
 * compare, in alloc.c's noinline slow paths, which every exported form
 * shares. */

/* The way past the fast paths for every allocating form (malloc, calloc,
 * the memalign family, mallocx, C++'s new): a block of size bytes as
 * jemalloc's mallocx flags say (HZ_JE_ZERO, an alignment, an arena; 0 for
 * malloc's). The one place that starts the allocator, tests the mode,
 * counts, samples the call site, runs the arms and falls back. NULL and
 * errno ENOMEM when no one can serve it. */
HZ_NOINLINE void *hz_alloc_slow(size_t size, int flags);
/* The way for a pointer that may be the arenas' (or glibc's), for every
 * freeing form. */
HZ_NOINLINE void hz_free_slow(void *p);
/* realloc's and rallocx's way for all but a jemalloc block resized within
 * jemalloc: flags as hz_alloc_slow's; with HZ_JE_ZERO the bytes past the
 * old size read as zero. NULL (p untouched) when memory is out. */
HZ_NOINLINE void *hz_realloc_slow(void *p, size_t size, int flags);
/* malloc_usable_size's way for a pointer in the arenas' window. */
HZ_NOINLINE size_t hz_usable_slow(void *p);

/* Whether a block of size bytes with these flags is the arenas': from
 * hz_large_threshold, aligned to at most a huge page, no jemalloc arena named. */
static inline int hz_alloc_large(size_t size, int flags)
{
	return hz_route_large(size) && HZ_JE_ALIGN_OF(flags) <= HZ_HUGE_SIZE &&
	       !(flags & HZ_JE_ARENA_MASK);
}

/* A block aligned to align (a power of two): the memalign family's and
 * aligned new's way. */
static inline void *hz_alloc_aligned(size_t align, size_t size)
{
	return hz_alloc_slow(size, HZ_JE_LG_ALIGN(__builtin_ctzl(align)));
}

/* glibc's message for a pointer free cannot take, and abort. */
__attribute__((noreturn)) void hz_bad_pointer(const char *what);

/* glibc's memset (arm A of the A/B arms, the baseline), set with them. */
extern void *(*hz_ab_baseline)(void *p, int c, size_t n);

static inline void *hz_fast_malloc(size_t size)
{
	if (hz_likely(size < hz_threshold()))
		return hz_small.malloc(size);
	return hz_alloc_slow(size, 0);
}

/* No load of the arenas' table for a pointer outside their window, as
 * every one of jemalloc's is (registry.c). */
static inline void hz_fast_free(void *p)
{
	if (hz_unlikely(hz_reg_in_window(p)))
		hz_free_slow(p);
	else
		hz_small.free(p);
}

/* ---- fork_handlers.c ---- fork, for the whole library, in one set of handlers at
 * its top: the allocator's locks (allocator/fork_locks.c), the counters'
 * (obs/fork_reset.c) and the embedded jemalloc's (allocator/small_fork.c), taken in
 * that order after every other library's prepare handler has run and
 * released before any other library's parent or child handler runs, as
 * glibc's own malloc is locked inside fork. A handler of another library
 * may then allocate and free, whatever the order in which the libraries
 * started: glibc runs prepare handlers last-registered first and the
 * others first-registered first, so these are registered before any other
 * library's: the shared library catches every registration (atfork.c)
 * and registers these first; libhugezero.a registers them in its
 * constructor, which runs before the program's own. */

/* Registers the handlers, once: before any other registration, from any
 * thread (a second thread waits for the first). */
void hz_fork_register(void);

/* ---- verbose.c ---- HUGEZERO_VERBOSE's report of the configuration. */

/* The CPU, caches, fresh memory, the zeroer, the limits, the front end
 * and the policy, on stderr; snprintf into a stack buffer: no allocation
 * for these formats. */
void hz_verbose_print(void);

/* ---- init.c ---- the library's constructor (init.c), below only the
 * exported ABI. It configures every room from the options; nothing calls
 * it. */

/* Referenced by every file of the exported ABI (HZ_INIT_LINK), so that a
 * program linked with libhugezero.a, which takes only the objects it
 * needs, takes the constructor with any function of the library it
 * calls. */
extern const int hz_init_linked;
#define HZ_INIT_LINK __attribute__((used)) static const int *const hz_init_link = &hz_init_linked

#pragma GCC visibility pop

#endif
