/* The allocator's start and the mode (start.c). Decided at the first
 * call into the allocator, before it hands out a block, or by the
 * constructor if it comes first: in either case no block of this
 * allocator can reach glibc's free. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <string.h>

#include "../allocator/allocator.h"
#include "../obs/obs.h"
#include "../os/os.h"
#include "preload.h"

int hz_allocator_started;
int hz_mode_off, hz_mode_drawn;

/* The mode HUGEZERO_PROCESS_AB draws: "off" with its probability, else
 * "on"; NULL when there is no draw. From HUGEZERO_AB_SEED when given, so
 * a seed names a mode; else from fresh random bits, not the clock: a
 * fleet's processes start in the same second. */
static const char *draw_mode(void)
{
	double share = hz_option(HZ_OPT_PROCESS_AB)->frac;
	const struct hz_option_value *seed = hz_option(HZ_OPT_AB_SEED);
	if (share <= 0)
		return NULL;
	hz_mode_drawn = 1;
	return hz_ab_process_off(share, seed->given ? seed->size : hz_os_random64()) ? "off" : "on";
}

/* The mode: HUGEZERO_MODE when it is given as on or off (anything else is
 * named and ignored), else HUGEZERO_PROCESS_AB's draw; off only where
 * glibc's allocator is there (a refused draw is no draw). Returns
 * hz_mode_off. */
static int decide_mode(void)
{
	const struct hz_option_value *given = hz_option(HZ_OPT_MODE);
	const char *mode = given->given ? given->str : NULL;
	if (mode && strcmp(mode, "off") && strcmp(mode, "on")) {
		hz_os_log("ignoring HUGEZERO_MODE: not on or off: ", mode, NULL);
		mode = NULL;
	}
	const char *what = "HUGEZERO_MODE=off";
	if (!mode) {
		mode = draw_mode();
		what = "HUGEZERO_PROCESS_AB's draw of the off mode";
	}
	int off = mode && !strcmp(mode, "off");
	if (off && !(hz_glibc_malloc && hz_glibc_free)) {
		hz_os_log("ignoring ", what, ": no glibc allocator to forward to (a static program)");
		off = hz_mode_drawn = 0;
	}
	/* The __libc_* references bind to the first definition: another
	 * allocator preloaded after this library (tcmalloc, mimalloc) may
	 * define them. Off means glibc, or nothing. */
	Dl_info di;
	if (off && !(dladdr((void *)hz_glibc_malloc, &di) && di.dli_fname &&
		     strstr(di.dli_fname, "/libc.so."))) {
		hz_os_log("ignoring ", what, ": __libc_malloc is not glibc's (another allocator "
			  "is preloaded)");
		off = hz_mode_drawn = 0;
	}
	hz_mode_off = off;
	if (off) /* every free then reaches the slow path, which forwards */
		hz_reg_widen();
	return off;
}

/* HUGEZERO_SMALL: jemalloc's, or the next allocator's in the link order,
 * found without allocating. Where there is none (libhugezero.a), the
 * embedded jemalloc stays, and the reason is named when next was asked
 * for. auto is next under an address-space limit: jemalloc's first
 * mappings (its base, its radix tree's first leaf, its first extent)
 * take 8 MiB of address space before the first block, glibc's a few
 * pages of its heap. Returns whether jemalloc serves them. */
static int decide_small(const char *small)
{
	if (!strcmp(small, "auto")) {
		size_t as, data;
		hz_os_address_limits(&as, &data);
		if (as == SIZE_MAX && data == SIZE_MAX)
			return 1;
	} else if (!strcmp(small, "jemalloc")) {
		return 1;
	} else if (strcmp(small, "next")) {
		hz_os_log("ignoring HUGEZERO_SMALL: not auto, jemalloc or next: ", small, NULL);
		return 1;
	}
	static const char *const names[] = {"malloc", "calloc", "realloc", "free", "malloc_usable_size",
					    "posix_memalign", "malloc_trim", "mallctl", "malloc_stats_print",
					    "mallctlnametomib", "mallctlbymib"};
	void *f[sizeof names / sizeof names[0]];
	hz_next_family(names, f, sizeof names / sizeof names[0]);
	struct hz_small_next n = {
		(void *(*)(size_t))f[0],
		(void *(*)(size_t, size_t))f[1],
		(void *(*)(void *, size_t))f[2],
		(void (*)(void *))f[3],
		(size_t (*)(void *))f[4],
		(int (*)(void **, size_t, size_t))f[5],
		(int (*)(size_t))f[6],
		(int (*)(const char *, void *, size_t *, void *, size_t))f[7],
		(void (*)(void (*)(void *, const char *), void *, const char *))f[8],
		(int (*)(const char *, size_t *, size_t *))f[9],
		(int (*)(const size_t *, size_t, void *, size_t *, void *, size_t))f[10],
	};
	if (!hz_small_use_next(&n)) {
		hz_os_barrier_threads(); /* the table before the threshold (hz_threshold) */
		return 0;
	}
	if (strcmp(small, "auto"))
		hz_os_log("ignoring HUGEZERO_SMALL=next: no allocator after this library in the link "
			  "order (or not a shared library); small blocks are jemalloc's",
			  NULL, NULL);
	return 1;
}

/* Two threads' first calls may come at once (before the constructor, in
 * a program whose other libraries start threads): one starts the
 * allocator, the other waits for it, a few microseconds. A signal handler
 * interrupting the start on its own thread does not wait for itself: it
 * goes on with the allocator as it finds it. */
void hz_allocator_start(void)
{
	static int starting;
	static HZ_TLS int starting_here;
	if (__atomic_load_n(&hz_allocator_started, __ATOMIC_ACQUIRE) || starting_here)
		return;
	starting_here = 1;
	if (__atomic_exchange_n(&starting, 1, __ATOMIC_ACQ_REL)) {
		starting_here = 0;
		while (!__atomic_load_n(&hz_allocator_started, __ATOMIC_ACQUIRE))
			hz_os_yield();
		return;
	}
	hz_os_init();
	hz_options_load();
	/* The counters' first blocks are mapped before jemalloc's tables'
	 * pages may be given back below: mapped after, the kernel may place
	 * them in the tables' hole, which mallctl could then not map again. */
	hz_counters_reserve();
	if (!decide_mode()) {
		/* Small blocks to jemalloc, or to the next allocator: where
		 * decide_small says so, or where jemalloc's tables cannot be
		 * made writable (a commit limit refused it). Where jemalloc is
		 * not started, its tables' pages go back. */
		int jemalloc = decide_small(hz_option(HZ_OPT_SMALL)->str);
		int cache = hz_option(HZ_OPT_SMALL_CACHE)->num;
		int started = jemalloc && !hz_small_start(cache);
		if (!jemalloc || (!started && !decide_small("next")))
			hz_small_release_tables();
		else if (started && cache) /* its thread cache in front */
			hz_small_cache_install(&hz_small, hz_small_tcache_lazy());
		size_t threshold = hz_options_start_arenas();
		if (hz_hardened)
			hz_small_harden();
		__atomic_store_n(&hz_large_threshold, threshold, __ATOMIC_RELAXED);
	} else if (hz_small_tables_writable()) {
		/* Off: jemalloc starts only if its statistics are asked for. */
		hz_small_release_tables();
	}
	__atomic_store_n(&hz_allocator_started, 1, __ATOMIC_RELEASE);
	starting_here = 0;
}
