/* The small engine (small.c): the embedded jemalloc's glue, linked where
 * jemalloc is, in libhugezero.so and libhugezero.a; and HUGEZERO_SMALL=
 * next, the same table over the next allocator's malloc family (glibc's,
 * or a jemalloc, mimalloc or tcmalloc the program links or preloads after
 * this library), whose jemalloc extended API is made of the standard
 * calls: alignment by posix_memalign, zeroing by a clear, nothing resized
 * in place. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../obs/obs.h"
#include "allocator.h"

size_t hz_large_threshold;

struct hz_small_engine hz_small = {
	hz_je_malloc,   hz_je_calloc,  hz_je_realloc,  hz_je_free,   hz_je_malloc_usable_size,
	hz_je_mallocx,  hz_je_rallocx, hz_je_xallocx,  hz_je_nallocx, hz_je_dallocx,
	hz_je_sdallocx, 1,
};

/* The embedded jemalloc's defaults, its renamed malloc_conf, which it
 * reads when it initialises; MALLOC_CONF, read after it, wins. Each one
 * measured (README, "jemalloc's configuration"):
 * - tcache_max 1 MiB, the default HUGEZERO_LARGE_MIN: every size jemalloc
 *   serves has a thread cache (jemalloc's default stops at 32 KiB, above
 *   which every call takes its extent code and an arena lock);
 * - tcache_gc_incr_bytes 4 MiB: the cache's garbage collection every
 *   4 MiB allocated rather than 64 KiB, which with sizes up to 1 MiB ran
 *   every few calls (and flushed what the next calls wanted);
 * - lg_extent_max_active_fit 16: a free dirty extent up to 65536 times
 *   the size asked for may be carved (jemalloc's default, 64 times, left
 *   Redis's 56 KiB reply blocks unable to reuse the multi-MiB extents
 *   they had coalesced into once freed: jemalloc mapped fresh memory and
 *   decayed the old, so every page faulted in again; 1.05 M faults and
 *   645 MiB peak under LRANGE of 50 KB values, 171 K and 385 MiB so);
 * - dirty_decay_ms 10 s, as the arenas' HUGEZERO_DIRTY_DECAY_MS, and
 *   muzzy_decay_ms -1: pages free for 10 s are freed lazily
 *   (MADV_FREE), which the kernel takes back as soon as it needs memory
 *   (the machine's, or a memory cgroup's) and which cost no fault when
 *   the program takes them first; never released at once (MADV_DONTNEED)
 *   but by malloc_trim or a cgroup's pressure (large.c's hz_large_pressed).
 *   Whatever the decay's length (10 s to 5 min), its curve released a busy
 *   server's churn as it went, which every reply faulted in again: Redis's
 *   LRANGE of 500 KB values, 213 K faults and 4.7 requests/s, tcmalloc's
 *   49 K and 7.1; with lazy freeing, 49 K and 14.7;
 * - tcache_nslots_large 4: a thread cache keeps 4 blocks of each of
 *   jemalloc's large classes (from 16 KiB with 4 KiB pages), not 20.
 *   With tcache_max 1 MiB, 20 of each let every thread hoard up to 128
 *   MiB (26 with 4), and blocks freed by other threads stayed in the
 *   freeing thread's cache (threads_bench mixed, 4 threads, 8 B-4 MiB:
 *   peak RSS 549 MiB, 472 with 4; time 1.06x). */
#define JE_CONF                                                                                            \
	"tcache_max:1048576,tcache_gc_incr_bytes:4194304,lg_extent_max_active_fit:16,dirty_decay_ms:10000," \
	"muzzy_decay_ms:-1,tcache_nslots_large:4"
const char *hz_je_malloc_conf = JE_CONF;
/* And where the thread cache in front makes each thread's jemalloc cache
 * (small_cache.c), none made at a thread's first call: a thread's jemalloc
 * cache, made and filled at its first call and flushed at its exit, was
 * a sixth of a thread's life where it makes a few calls (threads_bench
 * threads: 70 us a thread, 60 without, glibc's 58). */
static const char conf_lazy[] = JE_CONF ",tcache:false";
static int lazy;
/* 1 where jemalloc could not start: it stays so (a call into it from
 * another thread would wait for its start without end), never called. */
static int start_failed;

/* The bounds of jemalloc's zeroed tables, a read-only section of their
 * own (scripts/jemalloc-rename.sh), in a segment of their own in
 * libhugezero.so (preload/tables.ld); weak: none in another jemalloc
 * build. */
extern char __start_hz_je_tables[] __attribute__((weak, visibility("hidden")));
extern char __stop_hz_je_tables[] __attribute__((weak, visibility("hidden")));
/* 1 while the tables' pages are given back; hz_small_tables_lock
 * (small_fork.c) held to change it. */
static int tables_released;

/* The pages the section spans: 0 when there is none. In libhugezero.so
 * they are its segment, theirs alone; linked from libhugezero.a, the
 * section ends the program's writable data, and its first page may hold
 * the program's (*own 0). */
static size_t table_pages(char **start, int *own)
{
	uintptr_t ps = hz_page_size, a = (uintptr_t)__start_hz_je_tables, b = (uintptr_t)__stop_hz_je_tables;
	*own = !(a & (ps - 1));
	a &= ~(ps - 1);
	b = (b + ps - 1) & ~(ps - 1);
	*start = (char *)a;
	return __start_hz_je_tables && b > a ? b - a : 0;
}

int hz_small_tables_writable(void)
{
	char *p;
	int own;
	size_t n = table_pages(&p, &own);
	return n ? hz_os_writable(p, n) : 0;
}

int hz_small_start(int lazy_tcache)
{
	int e = hz_small_tables_writable();
	if (e)
		return e;
	/* Where jemalloc's other sources of options are set, the program's
	 * MALLOC_CONF or the system's /etc/malloc.conf (a symbolic link whose
	 * target is the options), they say what is wanted of its thread
	 * caches: then they are as said, made at a thread's first call. */
	if (lazy_tcache && !hz_os_getenv("MALLOC_CONF") && !hz_os_path_present("/etc/malloc.conf")) {
		hz_je_malloc_conf = conf_lazy;
		lazy = 1;
	}
	unsigned k;
	size_t sz = sizeof k;
	/* Any call starts it; EAGAIN where it cannot (no pthread key left
	 * for its thread data: it would refuse every call). */
	if (hz_je_mallctl("arenas.narenas", &k, &sz, NULL, 0)) {
		start_failed = 1;
		return EAGAIN;
	}
	if (lazy) { /* started before (a call of the program's into its API): as it was */
		_Bool on = 1;
		sz = sizeof on;
		lazy = !hz_je_mallctl("opt.tcache", &on, &sz, NULL, 0) && !on;
	}
	hz_small_purge_started();
	return 0;
}

int hz_small_tcache_lazy(void)
{
	return lazy;
}

void hz_small_release_tables(void)
{
	char *p;
	int own;
	size_t n = table_pages(&p, &own);
	hz_small_tables_lock();
	if (n && own && !hz_os_unmap(p, n))
		tables_released = 1;
	hz_small_tables_unlock();
}

int hz_small_tables_back(void)
{
	if (start_failed)
		return EAGAIN;
	int e = 0;
	hz_small_tables_lock();
	if (tables_released) {
		char *p;
		int own;
		size_t n = table_pages(&p, &own);
		/* Refused where the limit has no room left, or where another
		 * mapping took the hole. */
		if (hz_os_map_at(p, n, 0))
			e = EAGAIN;
		else
			tables_released = 0;
	}
	hz_small_tables_unlock();
	return e;
}

void *hz_small_calloc(size_t size, int flags)
{
	hz_small_cache_je_first();
	void *p = flags ? hz_je_mallocx(size, flags) : hz_je_malloc(size);
	/* The whole block, as jemalloc's calloc leaves it: a later in-place
	 * rallocx or xallocx with MALLOCX_ZERO relies on that. */
	return p ? hz_zero_hinted_counted(p, hz_je_sallocx(p, 0), p) : NULL;
}

/* Whether the embedded jemalloc answers: it serves the small blocks (or
 * the mode is off), and its tables are in place (mapped back if they
 * were given back). */
static int je_ready(void)
{
	return hz_small.jemalloc && !hz_small_tables_back();
}

/* Bytes hz_small_trim gave back (MADV_DONTNEED): with muzzy_decay_ms -1
 * jemalloc's decay only frees lazily (its dirty_purged counts those), so
 * these are the pages the program faults in again if it takes them. */
static uint64_t trimmed;

static int next_trim(void);

static void refresh(void)
{
	uint64_t epoch = 1;
	size_t sz = sizeof epoch;
	hz_je_mallctl("epoch", &epoch, &sz, &epoch, sz);
}

static size_t get_size(const char *name)
{
	size_t v = 0, sz = sizeof v;
	hz_je_mallctl(name, &v, &sz, NULL, 0);
	return v;
}

void hz_small_totals(struct hz_small_totals *t)
{
	if (!je_ready()) { /* the next allocator's: not known here */
		t->in_use = t->mapped = 0;
		return;
	}
	refresh();
	t->in_use = get_size("stats.allocated");
	t->mapped = get_size("stats.mapped");
}

/* The requests (name: the statistic's in arena 0) of jemalloc's arenas
 * but the thread cache's: that one's are the cache's fills, a block each,
 * counted again as the program takes them from the cache (both of
 * jemalloc's figures lag alike). */
static uint64_t requests_but_cache(uint64_t all, const char *name)
{
	int a = hz_small_cache_arena();
	if (a < 0)
		return all;
	size_t mib[5], len = 5;
	uint64_t v = 0;
	size_t sz = sizeof v;
	if (hz_je_mallctlnametomib(name, mib, &len))
		return all;
	mib[2] = (size_t)a;
	if (hz_je_mallctlbymib(mib, len, &v, &sz, NULL, 0) || v > all)
		return all;
	return all - v;
}

void hz_small_counters(hz_counter_fn fn, void *arg)
{
	static const char *const names[][2] = {
		/* Requests, thread caches' included (merged when a cache
		 * flushes or its thread exits, so they lag a little); frees
		 * are the blocks given back to jemalloc's bins and extents,
		 * past the thread caches. */
		{"malloc.small.calls", "stats.arenas." HZ_JE_ARENAS_ALL ".small.nrequests"},
		{"malloc.small.frees", "stats.arenas." HZ_JE_ARENAS_ALL ".small.ndalloc"},
		{"malloc.small.large_calls", "stats.arenas." HZ_JE_ARENAS_ALL ".large.nrequests"},
		{"malloc.small.large_frees", "stats.arenas." HZ_JE_ARENAS_ALL ".large.ndalloc"},
	};
	struct hz_small_totals t;
	hz_small_totals(&t);
	int ready = je_ready(); /* under HUGEZERO_SMALL=next: 0, jemalloc left unstarted */
	/* And the thread cache's calls (small_cache.c), each block once, as
	 * the program takes it, in the figure of its class's kind. */
	uint64_t cached[2];
	hz_small_cache_split(&cached[0], &cached[1]);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		uint64_t v = 0;
		size_t sz = sizeof v;
		if (ready)
			hz_je_mallctl(names[i][1], &v, &sz, NULL, 0);
		if (ready && i == 0)
			v = requests_but_cache(v, "stats.arenas.0.small.nrequests") + cached[0];
		if (ready && i == 2)
			v = requests_but_cache(v, "stats.arenas.0.large.nrequests") + cached[1];
		fn(arg, names[i][0], v, 0);
	}
	fn(arg, "malloc.small.allocated_bytes", t.in_use, 1);
	fn(arg, "malloc.small.mapped_bytes", t.mapped, 1);
	fn(arg, "malloc.small.purged_bytes", __atomic_load_n(&trimmed, __ATOMIC_RELAXED), 0);
	hz_small_cache_counters(fn, arg);
}

/* Pages jemalloc holds free, dirty or freed lazily (MADV_FREE). */
static size_t held(void)
{
	refresh();
	return get_size("stats.arenas." HZ_JE_ARENAS_ALL ".pdirty") +
	       get_size("stats.arenas." HZ_JE_ARENAS_ALL ".pmuzzy");
}

void hz_small_trim(void)
{
	if (!je_ready()) {
		next_trim();
		return;
	}
	hz_small_cache_trim();
	size_t before = held();
	hz_small_mallctl("arena." HZ_JE_ARENAS_ALL ".purge", NULL, NULL, NULL, 0);
	size_t after = held();
	if (before > after)
		__atomic_fetch_add(&trimmed, (uint64_t)(before - after) * get_size("arenas.page"), __ATOMIC_RELAXED);
}

/* ---- HUGEZERO_SMALL=next ---- */

static struct hz_small_next next;
struct hz_small_next hz_small_ctl;

static void *next_mallocx(size_t size, int flags)
{
	size_t align = HZ_JE_ALIGN_OF(flags);
	void *p = NULL;
	if (align <= sizeof(void *)) /* malloc's alignment for every size */
		p = flags & HZ_JE_ZERO ? next.calloc(1, size) : next.malloc(size);
	else if (next.memalign(&p, align, size ? size : 1))
		p = NULL;
	else if (flags & HZ_JE_ZERO) /* the whole block, as jemalloc's */
		hz_fill_counted(p, 0, next.usable(p));
	if (!p)
		errno = ENOMEM;
	return p;
}

/* Moved when aligned beyond malloc's; with MALLOCX_ZERO the bytes past
 * the old usable size read as zero. */
static void *next_rallocx(void *p, size_t size, int flags)
{
	size_t old = next.usable(p), new = size ? size : 1;
	void *q;
	if (HZ_JE_ALIGN_OF(flags) > sizeof(void *)) {
		if ((q = next_mallocx(new, flags & ~HZ_JE_ZERO))) {
			memcpy(q, p, old < new ? old : new);
			next.free(p);
		}
	} else {
		q = next.realloc(p, new);
	}
	if (!q)
		errno = ENOMEM;
	else if ((flags & HZ_JE_ZERO) && next.usable(q) > old) /* to the end, as jemalloc's */
		hz_fill_counted((char *)q + old, 0, next.usable(q) - old);
	return q;
}

static size_t next_xallocx(void *p, size_t size, size_t extra, int flags)
{
	(void)size, (void)extra, (void)flags;
	return next.usable(p);
}

/* At least size: the next allocator's rounding is its own; 0 for a size
 * no one serves, as jemalloc's. */
static size_t next_nallocx(size_t size, int flags)
{
	(void)flags;
	return size > PTRDIFF_MAX ? 0 : size ? size : 1;
}

static void next_dallocx(void *p, int flags)
{
	(void)flags;
	next.free(p);
}

static void next_sdallocx(void *p, size_t size, int flags)
{
	(void)size, (void)flags;
	next.free(p);
}

int hz_small_use_next(const struct hz_small_next *fns)
{
	if (!fns->malloc || !fns->calloc || !fns->realloc || !fns->free || !fns->usable || !fns->memalign)
		return -1;
	next = *fns;
	if (next.mallctl && next.stats_print && next.nametomib && next.bymib)
		hz_small_ctl = next;
	hz_small = (struct hz_small_engine){
		next.malloc,   next.calloc,   next.realloc,  next.free,    next.usable,
		next_mallocx,  next_rallocx,  next_xallocx,  next_nallocx, next_dallocx,
		next_sdallocx, 0,
	};
	return 0;
}

static int next_trim(void)
{
	return next.trim ? next.trim(0) : 0;
}
