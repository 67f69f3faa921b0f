/* allocator/allocator.h: the allocator's one header, its files' functions
 * bottom-up, one section a file, each calling only the sections above it
 * (docs/layers.txt states the order, tests/layers.py checks it): the
 * layout and bit ranges; limits (what the kernel lets the process use);
 * the registry (address to chunk or huge block) and its window; fresh
 * memory; a chunk's runs and their purge; huge blocks; the zeroer's
 * claim; the arenas; their budget; blocks in chunks (run); huge blocks
 * served from caches; the zeroer (its work and thread); large, the entry
 * preload/ calls for large blocks; fork; the small engine. The reasoning
 * behind the rooms: docs/design.md. */
#ifndef HZ_ALLOCATOR_ALLOCATOR_H
#define HZ_ALLOCATOR_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "../arch/common.h"
#include "../os/os.h"
#include "../obs/obs.h"

#pragma GCC visibility push(hidden)

/* ---- layout (here only) ---- the arenas' units. 4 KiB pages and 2 MiB huge
 * pages (x86-64, and arm64 with 4 KiB pages: the arenas check
 * hz_page_size against HZ_PAGE before they map a chunk), 64 MiB chunks,
 * and the sizes that route a block. */

#define HZ_PAGE_SHIFT 12
#define HZ_PAGE ((size_t)1 << HZ_PAGE_SHIFT)
#define HZ_CHUNK_SHIFT 26 /* 64 MiB */
#define HZ_CHUNK_SIZE ((size_t)1 << HZ_CHUNK_SHIFT)
#define HZ_CHUNK_PAGES (HZ_CHUNK_SIZE >> HZ_PAGE_SHIFT)
#define HZ_CHUNK_WORDS (HZ_CHUNK_PAGES / 64)
#define HZ_HUGE_PAGES (HZ_HUGE_SIZE >> HZ_PAGE_SHIFT)

/* Arenas: a thread keeps to one (arena.c). */
#define HZ_ARENAS 4
/* The largest block a chunk serves; larger ones are huge blocks. */
#define HZ_RUN_MAX (HZ_CHUNK_SIZE / 2)
/* The largest block the arenas serve. */
#define HZ_HUGE_MAX ((size_t)1 << 46)

/* ---- bit ranges (here only) ---- bit ranges over arrays of 64-bit words, the
 * chunks' per-page state (chunk.c). */

static inline int hz_bit(const uint64_t *b, size_t i)
{
	return (int)((b[i >> 6] >> (i & 63)) & 1);
}

/* The masks of [i, j)'s first word (i >> 6) and last word ((j - 1) >> 6),
 * for j > i: the words between are whole, and take no mask (a chunk's
 * block of 1 MiB is 4 words, whose state changes at every malloc). */
static inline uint64_t hz_bits_first(size_t i)
{
	return ~0ull << (i & 63);
}

static inline uint64_t hz_bits_last(size_t j)
{
	return ~0ull >> (63 - ((j - 1) & 63));
}

/* Sets (v = 1) or clears bits [i, j). */
static inline void hz_bits_set(uint64_t *b, size_t i, size_t j, int v)
{
	if (i >= j)
		return;
	size_t wi = i >> 6, wj = (j - 1) >> 6;
	uint64_t f = hz_bits_first(i), l = hz_bits_last(j);
	if (wi == wj)
		f &= l;
	b[wi] = v ? b[wi] | f : b[wi] & ~f;
	if (wi == wj)
		return;
	for (size_t w = wi + 1; w < wj; w++)
		b[w] = v ? ~0ull : 0;
	b[wj] = v ? b[wj] | l : b[wj] & ~l;
}

/* Sets in d the bits of [i, j) set in a or b. */
static inline void hz_bits_or(uint64_t *d, const uint64_t *a, const uint64_t *b, size_t i, size_t j)
{
	if (i >= j)
		return;
	size_t wi = i >> 6, wj = (j - 1) >> 6;
	for (size_t w = wi; w <= wj; w++)
		d[w] |= (a[w] | b[w]) & (w == wi ? hz_bits_first(i) : ~0ull) & (w == wj ? hz_bits_last(j) : ~0ull);
}

/* The bits set in x, in plain arithmetic: a build for the baseline
 * x86-64 has no popcount instruction, and the compiler's builtin then
 * calls libgcc's, which a chunk's fit paid for on every block. */
static inline unsigned hz_popcount64(uint64_t x)
{
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* The number of bits set in [i, j). */
static inline size_t hz_bits_count(const uint64_t *b, size_t i, size_t j)
{
	if (i >= j)
		return 0;
	size_t wi = i >> 6, wj = (j - 1) >> 6;
	uint64_t f = hz_bits_first(i), l = hz_bits_last(j);
	if (wi == wj)
		return hz_popcount64(b[wi] & f & l);
	size_t k = hz_popcount64(b[wi] & f) + hz_popcount64(b[wj] & l);
	for (size_t w = wi + 1; w < wj; w++)
		k += hz_popcount64(b[w]);
	return k;
}

/* The first index in [i, limit) whose bit is want, or limit. */
static inline size_t hz_bits_find(const uint64_t *b, size_t i, size_t limit, int want)
{
	while (i < limit) {
		uint64_t w = want ? b[i >> 6] : ~b[i >> 6];
		w &= ~0ull << (i & 63);
		if (w) {
			size_t k = (i & ~(size_t)63) + (size_t)__builtin_ctzll(w);
			return k < limit ? k : limit;
		}
		i = (i | 63) + 1;
	}
	return limit;
}

/* ---- limits.c ---- what the process may use, as the kernel will
 * enforce it: the machine's memory and swap, the overcommit mode, the
 * address-space rlimits, and the memory cgroup's limit and usage (cgroup
 * v2 memory.max and memory.high, v1 memory.limit_in_bytes, the least of
 * the process's group and its ancestors). Read through os/os.h at setup,
 * the cgroup's again by hz_limits_refresh; the arenas and the purge read
 * the figures. Where a file cannot be read (no /proc, no /sys, no fd
 * left), the figure is unknown: no cgroup limit, overcommit mode 0 (the
 * kernel's heuristic, which refuses a single mapping larger than memory
 * and swap). */

#define HZ_LIMIT_NONE SIZE_MAX

struct hz_limits {
	size_t ram, swap;      /* sysinfo(2); 0 when refused */
	int overcommit;        /* vm.overcommit_memory: 0, 1 or 2 */
	size_t as, data;       /* RLIMIT_AS, RLIMIT_DATA (HZ_LIMIT_NONE) */
	size_t cgroup;         /* the memory cgroup's limit (HZ_LIMIT_NONE) */
	int cgroup_version;    /* 1 or 2; 0 when no memory controller was found */
	unsigned cpu_quota;    /* CPUs a cgroup's CPU quota allows (cpu.max, v1 cpu.cfs_quota_us), rounded down, at least 1; 0: none */
	char dir[192];         /* the limiting group's directory, its usage file's */
};
extern struct hz_limits hz_limits;

/* Reads every figure (at setup, before the first block; no lock held). */
void hz_limits_read(void);
/* Reads the cgroup's limit again (it may be changed at run time). */
void hz_limits_refresh(void);
/* The limiting cgroup's usage now, in bytes (v2 memory.current, v1
 * memory.usage_in_bytes); HZ_LIMIT_NONE when there is no limit or it
 * cannot be read. Three system calls. */
size_t hz_limits_usage(void);
/* Of that usage, the file pages the kernel drops first when the group
 * reaches its limit (memory.stat's inactive_file, v1 total_inactive_file):
 * page cache, not pressure; 0 when it cannot be read. */
size_t hz_limits_reclaimable(void);
/* The largest block the kernel would map for anyone: memory and swap
 * under the heuristic (mode 0, and 2, whose commit limit is lower
 * still), the address space in mode 1; never more than the rlimits. */
size_t hz_limits_max_block(size_t address_space);

/* ---- registry.c ---- the arenas' address table and their window.
 *
 * For every 64 MiB slot of the address space (address >> HZ_CHUNK_SHIFT)
 * the table holds an entry: 0, a chunk's descriptor (chunk.c), or (low
 * bit HZ_REG_HUGE set) a huge block's (huge.c). Two levels, leaves mapped
 * on demand and never unmapped; readers take no lock, writers one.
 *
 * The window: the arenas place their memory in [HZ_REG_WINDOW_LO,
 * HZ_REG_WINDOW_LO + hz_reg_span) where they can (fresh.c), so a pointer
 * outside it is known not to be theirs with one load and no lookup. Where
 * memory had to be mapped elsewhere the span widens to every address
 * (hz_reg_widen) and the table decides. docs/design.md, "The window". */

#define HZ_REG_BITS (47 - HZ_CHUNK_SHIFT) /* user address space of x86-64, arm64 */
#define HZ_REG_LEAF_BITS 11
#define HZ_REG_ROOT (1u << (HZ_REG_BITS - HZ_REG_LEAF_BITS))
#define HZ_REG_LEAF (1u << HZ_REG_LEAF_BITS)
#define HZ_REG_HUGE ((uintptr_t)1) /* the entry is a huge block's descriptor */

extern uintptr_t *hz_reg_root[HZ_REG_ROOT];

/* The entry of p's slot, or 0: two loads, no lock. */
static inline uintptr_t hz_reg_get(const void *p)
{
	uintptr_t i = (uintptr_t)p >> HZ_CHUNK_SHIFT;
	if (i >> HZ_REG_BITS)
		return 0;
	uintptr_t *leaf = __atomic_load_n(&hz_reg_root[i >> HZ_REG_LEAF_BITS], __ATOMIC_ACQUIRE);
	return leaf ? __atomic_load_n(&leaf[i & (HZ_REG_LEAF - 1)], __ATOMIC_ACQUIRE) : 0;
}

/* Points the slots of [base, base+len) at e (0 to unregister). 0, or
 * ENOMEM when a leaf cannot be mapped or the range is past the table. */
int hz_reg_set(const void *base, size_t len, uintptr_t e);

#define HZ_REG_WINDOW_LO ((uintptr_t)1 << 44) /* 16 TiB */
#define HZ_REG_WINDOW ((uintptr_t)1 << 44)
/* The window's span: HZ_REG_WINDOW, or UINTPTR_MAX once widened. */
extern uintptr_t hz_reg_span;
/* Whether p may be the arenas' (free's first test): one load. */
static inline int hz_reg_in_window(const void *p)
{
	return (uintptr_t)p - HZ_REG_WINDOW_LO < __atomic_load_n(&hz_reg_span, __ATOMIC_RELAXED);
}
/* Whether [p, p+size) lies in the window as first placed (not widened). */
static inline int hz_reg_in_first_window(const void *p, size_t size)
{
	uintptr_t off = (uintptr_t)p - HZ_REG_WINDOW_LO;
	return off < HZ_REG_WINDOW && size <= HZ_REG_WINDOW - off;
}
/* Every address from now on may be the arenas': free asks the table. */
void hz_reg_widen(void);

/* fork (fork_locks.c): the table's writers' lock. */
void hz_reg_lock(void);
void hz_reg_unlock(void);

/* ---- fresh.c ---- fresh memory for the arenas, in one place: where a
 * new mapping goes (the window, registry.c), whether it asks for
 * transparent huge pages or small ones (decided by measuring first
 * touches, HUGEZERO_FRESH forcing either), and the counters of both.
 * Why huge pages are measured rather than assumed: docs/design.md, "Fresh memory". */

enum hz_fresh_mode { HZ_FRESH_AUTO, HZ_FRESH_HUGE, HZ_FRESH_SMALL };
#define HZ_FRESH_REPROBE_NS ((uint64_t)10 * 1000000000u)

/* Whether new mappings may ask for transparent huge pages at all
 * (HUGEZERO_THP), and the mode; set once at setup, before any mapping. */
extern int hz_thp;
void hz_fresh_setup(int thp, enum hz_fresh_mode mode);

/* Places size bytes of fresh memory aligned to HZ_CHUNK_SIZE, in the
 * window where there is room, anywhere else (the window widened) where
 * there is none; hugetlb as hz_os_map_hugetlb. No advice. 0, or ENOMEM
 * (also at once where the window has worked and the kernel refuses size
 * bytes: no over-mapped try elsewhere). */
int hz_fresh_place(size_t size, int hugetlb, void **out);
/* A new mapping of the arenas: with *hugetlb set, from the hugetlb pool
 * when it can give size bytes (*hugetlb stays 1); otherwise placed
 * (*hugetlb 0) and, with hz_thp, advised for huge or small pages as last
 * decided, its first huge page then touched and timed (no lock held: it
 * may take milliseconds). *advice: what it was advised (enum
 * hz_fresh_advice). 0, or ENOMEM. */
enum hz_fresh_advice { HZ_ADVISED_NONE, HZ_ADVISED_SMALL, HZ_ADVISED_HUGE };
int hz_fresh_map(size_t size, int *hugetlb, int *advice, void **out);
/* MADV_HUGEPAGE on [p, p+size) with hz_thp, counted (a mapping moved by
 * mremap keeps its pages). */
void hz_fresh_advise_moved(void *p, size_t size);
/* The decision for the next new mapping, 1 for huge pages: before a
 * large allocation, no lock held (a watched block read when due). */
int hz_fresh_decide(void);
/* Whether a probe is due: a watched block has been read and the last
 * probe is HZ_FRESH_REPROBE_NS old, or (again 0) there was none. Whoever
 * runs it calls hz_fresh_probe_if_due, no lock held (it may take
 * milliseconds): a program's thread about to map fresh memory for a
 * block (the mapping is what the probe decides; the first probe waits for
 * one, so a program that recycles its blocks never pays for it), else,
 * again, the zeroer's thread. */
int hz_fresh_probe_due(int again);
void hz_fresh_probe_if_due(int again);
/* Measures now (HUGEZERO_VERBOSE, hugezero info); 1 when huge pages won. */
int hz_fresh_probe(void);

/* Whether the arenas should time their own first touches of fresh huge
 * pages (HUGEZERO_FRESH=auto with huge pages asked for at all). */
int hz_fresh_sampling(void);
/* One first touch of a fresh huge page, timed where it happened (a
 * block's first page, the zeroer's population of a whole huge page): the
 * decision follows the median of the recent ones against the small
 * pages' figure, measured at the last probe. */
void hz_fresh_sample(uint64_t ns);
/* The block at `block`, just handed out, whose size bytes from p are all
 * fresh and were advised `advice`: watched, when no other block is, to
 * learn how much of it the program touches (the range advised small pages
 * for the while where it asked for huge ones; from 8 MiB only a 4 MiB
 * slice in its middle): 1 when the whole range is watched, 2 a slice, 0
 * when not watched. A block to be populated (populated set), whose
 * watched range costs the program its faults, is watched only before the
 * first reading and at the once-a-second refresh. No lock held. */
int hz_fresh_watch(void *block, void *p, size_t size, int advice, int populated);
/* When block is the one watched: 1, and the watched range's offsets
 * from it in [*lo, *hi) (population leaves them alone); else 0. */
int hz_fresh_watched(const void *block, size_t *lo, size_t *hi);
/* Before the block at p is freed or resized (no lock held): read, if it
 * was the one watched. */
void hz_fresh_freed(const void *p);
/* The advice memory advised `advice` should have now: the last decision
 * (or `advice` itself where nothing is decided: a forced mode, no THP, no
 * advice given). When it differs, the caller re-advises with
 * hz_fresh_readvise, no lock held. */
int hz_fresh_advice_now(int advice);
/* [p, p+size) advised `advice` (HZ_ADVISED_HUGE or _SMALL), counted. */
void hz_fresh_readvise(void *p, size_t size, int advice);

/* fork (fork_locks.c): the watch's lock; in the child, a probe that was
 * running on another thread is over, and the next is due in 10 s. */
void hz_fresh_fork_prepare(void);
void hz_fresh_fork_parent(void);
void hz_fresh_fork_child(void);

struct hz_fresh_stats {
	uint64_t probes;                /* measurements made */
	uint64_t samples;               /* first touches of huge pages timed */
	uint64_t switches;              /* decisions that changed */
	uint64_t huge_ns, small_ns;     /* the last probe's first touches (small: of 512 pages) */
	uint64_t recent_huge_ns;        /* the median of the recent huge samples: what decided */
	uint64_t readvised;             /* mappings re-advised after the decision changed */
	uint64_t density;               /* the recent watched blocks' median share touched, 1/1024ths */
	uint64_t watches;               /* blocks watched */
	uint64_t huge_maps, small_maps; /* new mappings advised each way */
	uint64_t thp_advised, thp_refused; /* MADV_HUGEPAGE taken, refused */
	int huge;                       /* the current decision */
	int thp;                        /* the last probe got a huge page */
	int reporting;                  /* free page reporting seen (reported, not a rule) */
};
void hz_fresh_stats(struct hz_fresh_stats *out);

/* ---- chunk.c ---- page runs inside one 64 MiB hugepage chunk, and
 * what each page holds. First-fit runs, coalesced when freed; every free
 * page is dirty (may hold non-zero bytes), clean (in memory and zero: the
 * zeroer cleared or populated it), or neither (fresh, or released: zero,
 * not in memory). A page of a live block is dirty. calloc clears only the
 * dirty runs of a block. Not thread-safe: the caller holds the chunk's arena
 * lock. */

struct hz_chunk {
	unsigned char *base;              /* HZ_CHUNK_SIZE bytes, aligned */
	size_t free_pages;
	size_t dirty_free;                /* pages free and dirty */
	size_t clean_free;                /* pages free and clean; with dirty_free, what a purge could release */
	size_t taken_fresh;               /* pages of the last run handed out that were neither (not in memory) */
	size_t taken_clean;               /* that were clean (the zeroer's work) */
	size_t taken_populated;           /* and of those, populated */
	size_t taken_released;            /* that the arenas had released (the program faults them in again) */
	uint32_t busy_lo, busy_hi;        /* free pages the zeroer has claimed (claim.c): no purge there */
	unsigned owner;                   /* the arena it belongs to (arena.c) */
	int hugetlb;                      /* backed by hugetlb pages, not THP */
	int advice;                       /* its pages' advice (enum hz_fresh_advice) */
	uint64_t freed;                   /* when a block was last freed here (its arena's clock) */
	int tried;                        /* the dirty budget's pass has purged it (budget.c) */
	uint64_t used[HZ_CHUNK_WORDS];    /* page belongs to a live block */
	uint64_t dirty[HZ_CHUNK_WORDS];   /* page may hold non-zero bytes */
	uint64_t clean[HZ_CHUNK_WORDS];   /* page is free, in memory and zero */
	uint64_t populated[HZ_CHUNK_WORDS]; /* clean page the zeroer faulted in (not cleared): the reserve */
	uint64_t shared[HZ_CHUNK_WORDS];  /* free dirty page shared with a forked process: not pre-cleared */
	uint64_t released[HZ_CHUNK_WORDS]; /* free page the arenas released, not in memory since */
	uint64_t start[HZ_CHUNK_WORDS];   /* page is the first of a live block */
	uint64_t open[(HZ_CHUNK_WORDS + 63) / 64]; /* bit w: used[w] has a free page (a fit skips full words) */
	uint32_t npages[HZ_CHUNK_PAGES];  /* at a block's first page: its length */
};

/* Maps a chunk's memory (hz_fresh_map: every page known zero) and
 * initialises c: with hugetlb set, from the hugetlb pool if it can give
 * 32 pages (c->hugetlb then 1). Returns 0, or ENOMEM (errno unchanged). */
int hz_chunk_init(struct hz_chunk *c, int hugetlb);
/* The chunk holding p, or NULL when no chunk does (a huge block is not
 * in a chunk): no lock. */
static inline struct hz_chunk *hz_chunk_of(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	return e & HZ_REG_HUGE ? NULL : (struct hz_chunk *)e;
}
/* Unmaps the chunk's memory. */
void hz_chunk_destroy(struct hz_chunk *c);

/* A run of npages (> 0) pages, first fit; NULL when no free run is long
 * enough. Its dirty pages stay dirty and the others read as zero until the
 * caller clears or writes them (hz_chunk_mark_dirty); taken_fresh counts
 * those that were not in memory. */
void *hz_chunk_alloc(struct hz_chunk *c, size_t npages);
/* The same, starting at a page index that is a multiple of align (a power
 * of two: chunks are chunk-aligned, so the address is too); with avoid
 * HZ_FIT_IN_MEMORY a run all in memory (dirty or clean) that never
 * overlaps the pages the zeroer has claimed (busy_lo, busy_hi); with
 * HZ_FIT_AWAY any run that does not overlap them: NULL when there is
 * none. */
enum hz_fit { HZ_FIT_ANY, HZ_FIT_IN_MEMORY, HZ_FIT_AWAY };
void *hz_chunk_alloc_avoiding(struct hz_chunk *c, size_t npages, size_t align, int avoid);
/* The length in pages of the live block starting at p, or 0 when p is not
 * the start of a live block of this chunk (a foreign pointer, or one freed
 * already). */
size_t hz_chunk_block_pages(const struct hz_chunk *c, const void *p);
/* Frees the live block at p (hz_chunk_block_pages(c, p) != 0): its pages
 * become free and dirty. Returns its length in pages. */
size_t hz_chunk_free(struct hz_chunk *c, void *p);

/* Resizes the live block at p in place to npages (> 0): shrinking frees
 * its tail (dirty); growing takes the free pages right after it, marked
 * dirty (the program writes them). Returns 0, or -1 when the pages after
 * it are not free (nothing changes). */
int hz_chunk_resize(struct hz_chunk *c, void *p, size_t npages);

/* How calloc zeroes a dirty run: 0 clears it in place (on this machine
 * 2-3x faster than the kernel's refault, bench/calloc_bench), 1 releases
 * it with MADV_DONTNEED for the kernel to fault zero pages back in. Set
 * once by hz_large_setup. */
extern int hz_calloc_release;
/* How calloc zeroes the dirty runs of a live block: decided under the
 * arena lock (hz_chunk_zero_plan, which only reads the chunk), carried out
 * after it (hz_chunk_zero_runs: the block is the caller's, and the chunk's
 * base and kind never change), so other threads of the arena do not wait
 * for a clear of up to 32 MiB. Runs are page indices in execution order;
 * when the block's first page is dirty, its run is last and hinted at it. */
#define HZ_ZERO_RUNS 16
struct hz_zero_plan {
	unsigned n;
	int hinted;
	uint32_t lo[HZ_ZERO_RUNS], hi[HZ_ZERO_RUNS];
	size_t known_zero; /* bytes of the block left as they were: zero */
};
void hz_chunk_zero_plan(const struct hz_chunk *c, const void *p, struct hz_zero_plan *plan);
void hz_chunk_zero_runs(const struct hz_chunk *c, const struct hz_zero_plan *plan, void *p);
/* Both at once, and the runs marked known zero: returns the bytes it did
 * not have to clear. */
size_t hz_chunk_calloc_clear(struct hz_chunk *c, void *p);
/* Marks the pages of the live block at p dirty (the caller wrote them or
 * will: a block handed out is dirty from then on). */
void hz_chunk_mark_dirty(struct hz_chunk *c, void *p);

/* Whether any page of [lo, hi) is in memory (dirty, or free and clean). */
int hz_chunk_any_in_memory(const struct hz_chunk *c, size_t lo, size_t hi);

/* Pages of the chunk that are free and in state (c->dirty or c->clean),
 * counted from the bitmaps (c->dirty_free and c->clean_free keep the same
 * figures as they change). */
size_t hz_chunk_count_free(const struct hz_chunk *c, const uint64_t *state);

/* ---- for the zeroer (claim.c, zeroer.c), lock held ---- */

/* The first run of free pages at or after page `from`, within one huge
 * page, that are dirty (want_dirty) or neither dirty nor clean; 0 and the
 * run in [*lo, *hi), or -1 when there is none. */
int hz_chunk_next_run(const struct hz_chunk *c, int want_dirty, size_t from, size_t *lo, size_t *hi);
/* Pages [lo, hi), free and now zero in memory, become clean; populated
 * when the zeroer faulted them in rather than cleared them. */
void hz_chunk_set_clean(struct hz_chunk *c, size_t lo, size_t hi, int populated);
/* Pages [lo, hi), free, zero and not in memory (never touched, or given
 * back by the caller), become fresh: neither dirty nor clean. */
void hz_chunk_set_fresh(struct hz_chunk *c, size_t lo, size_t hi);
/* Free dirty pages [lo, hi) are shared copy-on-write with a forked
 * process: left to calloc (a clear would only copy them), until taken or
 * released. */
void hz_chunk_set_shared(struct hz_chunk *c, size_t lo, size_t hi);
/* Free pages [lo, hi) are claimed by the zeroer ([0, 0): none). */
static inline void hz_chunk_set_busy(struct hz_chunk *c, size_t lo, size_t hi)
{
	c->busy_lo = (uint32_t)lo;
	c->busy_hi = (uint32_t)hi;
}

/* ---- chunk.c: the purge ---- chunks' free memory back to the kernel. Gathers
 * their whole free 2 MiB blocks (dirty or clean) into ranges, adjacent ones
 * merged, released in one batch (hz_os_release_batch) and marked neither
 * dirty nor clean; never a huge page in use, nor the zeroer's claimed
 * pages. Lock held, as chunk.c. */

/* What a purge did: its batches, and the clean pages among what it
 * released (the zeroer's work no block took), populated ones among them. */
struct hz_purge_result {
	struct hz_release_result batch;
	size_t clean_bytes, populated_bytes;
};

/* A purge gathered from one arena's chunks (its lock held from the first
 * gather to the flush) and released in one batch: the ranges, adjacent
 * ones merged, and the chunk of each. More ranges than fit flush early. */
#define HZ_PURGE_RANGES 128
struct hz_purge {
	struct hz_range r[HZ_PURGE_RANGES];
	struct hz_chunk *c[HZ_PURGE_RANGES];
	uint32_t lo[HZ_PURGE_RANGES], hi[HZ_PURGE_RANGES];
	size_t n, bytes;
	struct hz_purge_result total;
};
void hz_purge_begin(struct hz_purge *g);
/* Adds c's whole free 2 MiB blocks in memory, the highest first (the last
 * that first fit would hand out again), until `most` bytes are gathered
 * (SIZE_MAX: all; the last may pass it, a huge page is never split); with
 * partial set also its free pages in memory outside whole blocks
 * (malloc_trim; not on hugetlb chunks). Returns the bytes gathered. */
size_t hz_purge_gather(struct hz_purge *g, struct hz_chunk *c, int partial, size_t most);
/* Adds c's whole free 2 MiB blocks in memory within pages [lo, hi) (a
 * freed block's own: its partial ones, shared with its neighbours, stay);
 * returns the bytes gathered. */
size_t hz_purge_gather_span(struct hz_purge *g, struct hz_chunk *c, size_t lo, size_t hi);
/* Releases what is gathered, marks it released, and returns every byte
 * the purge released since hz_purge_begin (g->total says how). */
size_t hz_purge_flush(struct hz_purge *g);

/* One chunk's purge (hz_purge_gather, then hz_purge_flush): the bytes
 * released; *res, if not NULL, receives what it did. */
size_t hz_purge_chunk(struct hz_chunk *c, int partial, size_t most, struct hz_purge_result *res);

/* ---- huge.c ---- a huge block's descriptor and mapping. A block too
 * large for a chunk gets a mapping of its own, aligned to the chunk size
 * so that no other block shares its registry slots. Descriptors come from
 * a pool and are never unmapped: free's ownership test reads them without
 * a lock. Serving, caching and resizing them is huge_cache.c's. */

struct hz_huge {
	unsigned char *base;
	size_t size;   /* usable bytes, whole pages */
	size_t mapped; /* whole huge pages; whole pages where no more could be mapped */
	int live, dirty;
	int advice;           /* its mapping's (enum hz_fresh_advice) */
	size_t cleared;       /* while free and dirty: its first bytes the zeroer made zero */
	int shared;           /* while free: shared with a forked process, left to calloc */
	int program_protected; /* while live: the program changed its protection (no helper writes it) */
	unsigned owner;       /* its arena */
	uint64_t freed;       /* its arena's clock when it was freed */
	struct hz_huge *next; /* in its arena's cache while free */
};

/* Every huge block mapped to its size in whole pages, and blocks of every
 * size served as huge blocks, none in chunks: where every mapping is
 * charged in full (overcommit mode 2) or counts against an address-space
 * rlimit (RLIMIT_AS, RLIMIT_DATA). Set once at setup. */
extern int hz_huge_fitted;

/* Whether p lies in the huge block whose registry entry is e (its
 * mapping may end inside its last slot, where other memory can follow).
 * Lock-free: a stale answer can only concern a pointer that is not a
 * live block. */
static inline int hz_huge_holds(const void *p, uintptr_t e)
{
	const struct hz_huge *h = (const struct hz_huge *)(e & ~HZ_REG_HUGE);
	uintptr_t base = (uintptr_t)__atomic_load_n(&h->base, __ATOMIC_RELAXED);
	return (uintptr_t)p - base < __atomic_load_n(&h->mapped, __ATOMIC_RELAXED);
}
/* The huge block whose first byte is p, live or cached; NULL otherwise. */
static inline struct hz_huge *hz_huge_at(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	struct hz_huge *h = (struct hz_huge *)(e & ~HZ_REG_HUGE);
	return (e & HZ_REG_HUGE) && h->base == p ? h : NULL;
}

/* A new fresh mapping of `mapped` bytes (of `usable`, whole pages, where
 * that much cannot be mapped: an address-space limit) for arena owner,
 * registered, dirty (the program writes it); NULL when memory is out. */
struct hz_huge *hz_huge_map(size_t mapped, size_t usable, unsigned owner);
/* Shortens the free block h to its first `mapped` bytes (whole huge
 * pages): the slots wholly past the new end unregistered, the tail
 * unmapped, what the zeroer cleared kept within it. */
void hz_huge_cut(struct hz_huge *h, size_t mapped);
/* Moves h's pages to a new place of `mapped` bytes by the kernel
 * (mremap), registered there and no longer at the old place: 0, or -1
 * (h unchanged). Its arena's lock held: the block stays live. */
int hz_huge_remap(struct hz_huge *h, size_t mapped);
/* Unregisters and unmaps a free huge block, its descriptor back to the
 * pool (its arena's lock held, or one no other thread can reach yet). */
void hz_huge_destroy(struct hz_huge *h);

/* fork (fork_locks.c): the descriptor pool's lock. */
void hz_huge_lock(void);
void hz_huge_unlock(void);

/* ---- claim.c ---- the zeroer's claim, the one piece of free memory it
 * works on at a time, and the protocol with the threads that hand memory
 * out. A piece is pages [lo, hi) of a chunk within one huge page (to
 * clear, or to populate: the reserve), or [off, off + len) of a cached
 * dirty huge block. Set and ended under its arena's lock; `taken` is also
 * read between the zeroer's steps without it. A thread that hands out or
 * unmaps memory of the piece marks it taken (hz_claim_collide) and, for a
 * clear, waits on its arena's condition until the claim ends (arena.c).
 * The protocol in full: docs/design.md, "The background zeroer". Calls
 * chunk.c and huge.c. */

struct hz_arena; /* the claim names its arena, which it never calls */

struct hz_claim {
	struct hz_arena *a;      /* NULL: no piece (read atomically) */
	struct hz_chunk *c;      /* pages [lo, hi) of c ... */
	size_t lo, hi;
	struct hz_huge *h;       /* ... or [off, off + len) of the cached block h */
	size_t off, len;
	size_t extent;           /* the dirty memory at hand when claimed: the kernel's size */
	int populate;            /* MADV_POPULATE_WRITE, which changes no byte */
	int taken;               /* handed out or unmapped meanwhile: not to be published */
	int checked;             /* after a fork: alone says which pages are this process's only */
	uint64_t step_at;        /* when the zeroer began its current step (read without the lock) */
	uint64_t alone[8];
	int zero_known;          /* out says which pages are not in memory and read zero */
	uint64_t out[8];         /* bit i: page i is such a page: never cleared, published fresh */
	size_t out_bytes;        /* the bytes of such pages the zeroer went past */
};
extern struct hz_claim hz_claim;

/* Claims a piece in arena a (its lock held): chunk pages [lo, hi) of c,
 * or with c NULL [off, off + len) of h. */
void hz_claim_set(struct hz_arena *a, struct hz_chunk *c, size_t lo, size_t hi, struct hz_huge *h,
		  size_t off, size_t len, int populate);
/* Whether page i of the piece is this process's alone (always, unless
 * checked after a fork). */
static inline int hz_claim_alone(size_t i)
{
	return !hz_claim.checked || (hz_claim.alone[i / 64] >> (i % 64) & 1);
}
/* Whether page i of the piece is not in memory and reads zero (never
 * written since its release, or never touched, where nothing can swap
 * it out): nothing to clear, and published as fresh. */
static inline int hz_claim_out(size_t i)
{
	return hz_claim.zero_known && (hz_claim.out[i / 64] >> (i % 64) & 1);
}
/* What ending the claim did with the piece. */
enum hz_claim_end { HZ_CLAIM_ABANDONED, HZ_CLAIM_PUBLISHED, HZ_CLAIM_SHARED };
/* Ends the claim (a's lock held) after `done` bytes: published as clean
 * (chunk pages this process maps alone, fresh those not in memory; the
 * others marked shared), unless taken. The caller then wakes who waits on the arena's condition. */
enum hz_claim_end hz_claim_end(size_t done);
/* No piece: c's busy range cleared (the end, and a forked child). */
void hz_claim_reset(void);

/* ---- the allocator's side, the arena's lock held ---- */

/* Whether the claim is in a and overlaps chunk c's pages [lo, hi) (with
 * c NULL: is the cached block h). */
int hz_claim_overlaps(const struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		      const struct hz_huge *h);
/* Before such memory is handed out: an overlapping claim marked taken;
 * 1 when the caller must wait for its end (a clear, which writes), 0
 * otherwise (no overlap, or a population, which changes no byte). */
int hz_claim_collide(const struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		     const struct hz_huge *h);
/* Whether a piece of a is claimed; marked taken when one is (trim). */
int hz_claim_busy(const struct hz_arena *a);
/* Whether the cached block h of a is claimed: not to be released. */
int hz_claim_holds(const struct hz_arena *a, const struct hz_huge *h);

/* Whether a clear claimed in a has made no step for HZ_CLAIM_STALL_NS:
 * its thread, at SCHED_IDLE, gets no CPU (every core busy). A thread
 * then takes other pages, fresh ones even, rather than wait for it (a
 * lock's holder preempted, the classic inversion, unbounded). */
#define HZ_CLAIM_STALL_NS ((uint64_t)1000000u)
static inline int hz_claim_stalled(const struct hz_arena *a)
{
	return __atomic_load_n(&hz_claim.a, __ATOMIC_RELAXED) == a && !hz_claim.populate &&
	       hz_os_now_ns() - __atomic_load_n(&hz_claim.step_at, __ATOMIC_RELAXED) > HZ_CLAIM_STALL_NS;
}

/* Handouts that waited for a piece. */
extern uint64_t hz_claim_waits;

/* ---- arena.c ---- arenas, each a lock, the chunks it owns, its cache
 * of free huge blocks and its counters. A thread keeps to one arena, so
 * threads allocating at once are not serialised on one lock. The blocks
 * in chunks are run.c's, the huge blocks huge_cache.c's, what is released
 * budget.c's. The lock
 * order, for every lock of the allocator: fork_locks.c. */

/* An arena's counters, for reports; a forked child's start from zero. */
struct hz_arena_counters {
	size_t known_zero, purged;
	uint64_t purges, purge_ranges, purge_syscalls, purge_fallbacks;
	uint64_t nalloc, ncalloc, calloc_bytes, nfree;
	uint64_t hugetlb_chunks, hugetlb_fallbacks;
	uint64_t cleared_caller;               /* bytes calloc cleared on the caller's thread */
	uint64_t reserve_hits, reserve_misses; /* blocks handed out all in memory, or not */
	uint64_t unused;                       /* bytes the zeroer cleared or populated, released before a block took them */
	uint64_t refaulted, refaults;          /* bytes handed out again after a release, and the faults they cost (estimated) */
	uint64_t kept_taken;                   /* blocks handed out whole from the kept ones (arena.c) */
	uint64_t retained_taken;               /* huge blocks handed out at retained addresses (budget.c) */
};

/* The zeroer's recent record in an arena for one kind of its work
 * (populating, clearing): bytes it made clean that a block took, and that
 * were released before one did; zeroer.c stops that kind of work there
 * while the second outweighs the first. */
struct hz_record {
	size_t paid, wasted;
};

/* Half-octave size classes of large blocks from 4 KiB: the blocks taken
 * of each are counted (hz_budget_freed). */
#define HZ_TAKE_CLASSES 80
static inline unsigned hz_take_class(size_t bytes)
{
	unsigned k = bytes < 4096 ? 12 : 63 - (unsigned)__builtin_clzll(bytes);
	unsigned c = 2 * (k - 12) + (unsigned)((bytes >> (k - 1)) & 1);
	return c < HZ_TAKE_CLASSES ? c : HZ_TAKE_CLASSES - 1;
}

/* A chunk block freed and kept whole (arena.c): still used in its chunk
 * (its pages dirty, its length at its first page), no longer the
 * program's. */
struct hz_run_kept {
	struct hz_chunk *c;
	unsigned char *p;
	size_t npages;
};
/* An arena keeps the blocks of up to HZ_RUN_KEEP_MAX freed last, up to
 * HZ_RUN_KEEP of them and HZ_RUN_KEEP_BYTES in all. */
#define HZ_RUN_KEEP 4
#define HZ_RUN_KEEP_MAX ((size_t)2 << 20)
#define HZ_RUN_KEEP_BYTES ((size_t)4 << 20)
#define HZ_RUN_KEEP_TICK 16

struct hz_arena {
	pthread_mutex_t lock;
	pthread_cond_t claim_done; /* a claim in this arena ended (claim.c) */
	unsigned nchunks, cap;     /* no fixed cap: the array grows while the kernel maps chunks */
	struct hz_chunk **chunks;  /* mapped, doubled when full */
	size_t allocated;          /* bytes of live blocks */
	struct hz_huge *cache;     /* free huge blocks, most recently freed first */
	size_t cached;             /* their mapped bytes */
	size_t held;               /* its free bytes in memory when last published (atomic: other
				    * arenas read it without this lock for the process's budget) */
	uint64_t window_at;        /* when the decay's window began; 0: none (no free memory) */
	size_t low;                /* the least free memory in memory it held in the window (budget.c) */
	size_t evicted;            /* huge blocks' bytes released lately: a new one of that much counts as refaulted */
	struct hz_huge *retained;  /* huge blocks released, their mappings kept (budget.c), most recently first */
	size_t retained_bytes;     /* their mapped bytes, at most HZ_RETAINED_MAX */
	uint64_t frees;            /* a clock: blocks and chunks remember it when freed */
	size_t missed;             /* bytes handed out that were not in memory, since the last decay:
				    * the reserve refills up to this much (budget.c) */
	struct hz_record populated, cleared; /* the zeroer's recent record here */
	uint8_t takes[HZ_TAKE_CLASSES];    /* blocks taken of each size class, up to 2 (budget.c) */
	struct hz_run_kept kept[HZ_RUN_KEEP]; /* blocks freed, to be taken again whole (arena.c) */
	unsigned nkept;            /* how many, the most recently freed last */
	size_t kept_bytes;         /* their bytes */
	unsigned keep_ticks;       /* blocks kept: the decay's pass at every HZ_RUN_KEEP_TICK-th (run.c) */
	size_t last_npages;        /* the length of the chunk block it handed out last (run.c, arena.c) */
	struct hz_arena_counters n;
};

extern struct hz_arena hz_arenas[HZ_ARENAS];
/* Whether chunks come from the hugetlb pool (MAP_HUGETLB) when it can give
 * them; otherwise transparent huge pages. Set once at setup. */
extern int hz_hugetlb;

/* The calling thread's arena. */
struct hz_arena *hz_arena_of_thread(void);
static inline struct hz_arena *hz_arena_of(unsigned owner)
{
	return &hz_arenas[owner];
}

/* A new chunk for a, mapped and registered without the lock (mapping it,
 * and timing its first huge page, may take milliseconds); then added
 * under it. 0, or -1 when memory or address space is out. */
int hz_arena_grow(struct hz_arena *a);

/* Kept blocks (struct hz_run_kept), every call with a's lock held: c's
 * live block at p of npages kept, the oldest kept freed into their chunks
 * to make room (how many: dirty memory for the zeroer); whether p is
 * kept (freed already); a kept block of npages aligned to align bytes,
 * handed out (counted as hz_arena_count_alloc counts, allocated and
 * last_npages set), or NULL; every kept block freed into its chunk,
 * where a purge or the budget can release its pages. */
int hz_arena_keep(struct hz_arena *a, struct hz_chunk *c, void *p, size_t npages);
int hz_arena_is_kept(const struct hz_arena *a, const void *p);
void *hz_arena_take_kept(struct hz_arena *a, size_t npages, size_t align);
void hz_arena_drop_kept(struct hz_arena *a);

/* The arena's free bytes in memory (lock held): dirty chunk pages, clean
 * ones (the reserve), kept chunk blocks and cached huge blocks. */
size_t hz_arena_free_bytes(const struct hz_arena *a);
/* Its free clean chunk pages, in bytes (lock held): its share of the
 * reserve. */
size_t hz_arena_clean_bytes(const struct hz_arena *a);

/* The same over every arena, each under its lock (no lock held). */
size_t hz_arenas_free_bytes(void);
size_t hz_arenas_clean_bytes(void);

/* A block handed out (lock held): counted, with zero set as calloc's;
 * fresh of its bytes were not in memory. The free memory left lowers the
 * window's low-water mark (a->low). */
void hz_arena_count_alloc(struct hz_arena *a, size_t bytes, size_t fresh, int zero);
/* A block of `bytes` taken, or grown to it in place (lock held): its size
 * class's count (hz_budget_freed). */
void hz_arena_count_take(struct hz_arena *a, size_t bytes);
/* Publishes a's free bytes in memory, held (lock held), for the budget
 * of the whole process; and their sum over every arena, as last
 * published (no lock). */
void hz_arena_publish(struct hz_arena *a, size_t held);
size_t hz_arenas_held(void);

/* The arena's free memory just shrank (lock held): the low-water mark,
 * published. */
void hz_arena_note_low(struct hz_arena *a);
/* One purge of bytes, counted (lock held); returns bytes. */
size_t hz_arena_count_purge(struct hz_arena *a, const struct hz_purge_result *r, size_t bytes);

/* Before memory of a (lock held) is handed out or unmapped: chunk c's
 * pages [lo, hi), or with c NULL the cached block h. An overlapping claim
 * is marked taken and, for a clear, waited for (claim.c). */
void hz_arena_collide(struct hz_arena *a, const struct hz_chunk *c, size_t lo, size_t hi,
		      const struct hz_huge *h);
/* Waits until no piece of a is claimed (lock held; trim). */
void hz_arena_quiesce(struct hz_arena *a);

/* ---- budget.c ---- the dirty budget, what free memory the arenas keep
 * (one budget for the process) and for how long, and what goes back to
 * the kernel first: least recently freed first, a cached huge block
 * released (retained) or chunks' whole free 2 MiB blocks released in one batch
 * (chunk.c), never splitting a huge page; partial ones stay until
 * malloc_trim. Also the reserve's
 * size, which the zeroer fills (zeroer.c). In a memory cgroup both are
 * fitted to its limit. */

/* Free bytes in memory the arenas keep together (chunk pages and cached
 * huge blocks alike), and how long; the reserve: bytes of free clean pages across the
 * arenas the zeroer keeps. */
extern size_t hz_budget_dirty_max;
extern uint64_t hz_budget_decay_ns;
extern size_t hz_budget_reserve_max;
/* Whether a thread of the library (the background zeroer, where it is
 * enabled: large.c sets it) runs the decay's pass on its tick, every
 * 250 ms while the arenas hold free memory; otherwise frees run it. */
extern int hz_budget_ticked;

/* As configured (at setup, before any block); then fitted to the limits
 * by hz_budget_fit. */
void hz_budget_setup(size_t dirty_max, uint64_t decay_ms, size_t reserve);
/* The budget and the reserve within the memory cgroup's limit as it is
 * now (hz_limits.cgroup), and, with hz_huge_fitted, at most 16 MiB kept
 * free and no reserve: in a cgroup the dirty budget is at most an eighth
 * of its limit and the reserve a thirty-second. Returns the limit fitted
 * to. */
size_t hz_budget_fit(void);
/* No reserve from now on, whatever the limits (the kernel cannot
 * populate: no MADV_POPULATE_WRITE before Linux 5.14). */
void hz_budget_no_reserve(void);

/* After a free or at the decay's tick (lock held): when the arenas hold
 * more than hz_budget_dirty_max together, a's free memory goes back to the
 * kernel, least recently freed first, until they hold a quarter of the
 * budget less (one batch for many blocks, not a call for each); and at
 * the end of each window of hz_budget_decay_ns, the least free memory the
 * arena held during it (its low-water mark, which no allocation needed),
 * so that memory the program frees and asks for again is kept, and an
 * idle program's goes back. */
void hz_budget_bound(struct hz_arena *a);
/* realloc moved a block's bytes to a larger block and freed it, of
 * `bytes` (lock held, before hz_budget_bound). A buffer grown so leaves a
 * block of each size behind, which the program will not take again
 * unless it grows such buffers again and again: where it is the only
 * block of its size class the arena ever handed out, its memory goes
 * back at once, the whole 2 MiB blocks within its pages [lo, hi) of c,
 * or the cached huge block h, released. Where a second block of the
 * class was taken, it is kept, as every freed block is: the budget and
 * its decay bound it. */
void hz_budget_freed(struct hz_arena *a, size_t bytes, struct hz_chunk *c, size_t lo, size_t hi,
		     struct hz_huge *h);
/* A released huge block keeps its mapping, retained (jemalloc's term):
 * its pages go back (MADV_DONTNEED), and its addresses serve the next
 * huge block that fits, as a fresh mapping would, with no mmap or munmap.
 * munmap takes the write side of the lock of the mapping's anon_vma,
 * which a kernel thread walking the mapping's pages holds for reading
 * (DAMON's kdamond, kcompactd): one such thread preempted there by the
 * program's real-time threads made a free wait 600 ms. MADV_DONTNEED
 * takes no such lock. Not where mappings are charged in full
 * (hz_huge_fitted), nor where the pages cannot go (mlocked), nor in
 * hardened mode (hz_budget_retain: a write after free must fault), nor
 * a block whose protection the program changed: unmapped there, as by
 * malloc_trim, and when a new mapping fails. At most HZ_RETAINED_MAX
 * bytes an arena (4 GiB of addresses in all): the least recently
 * released are unmapped past it. A release that cuts a block's tail
 * unmaps the tail. */
#define HZ_RETAINED_MAX ((size_t)1 << 30)
extern int hz_budget_retain;
/* Unmaps every block a retains (lock held). */
void hz_budget_unmap_retained(struct hz_arena *a);
/* The retained block of a that fits `usable` bytes best, of at most a
 * quarter more than `mapped`, taken (lock held); NULL when none does. */
struct hz_huge *hz_budget_take_retained(struct hz_arena *a, size_t usable, size_t mapped);
/* Releases all the arena's free memory in memory, partial huge pages
 * included, and unmaps every cached and retained huge block, once the zeroer's claim
 * in a has ended (lock held); the reserve is not refilled until blocks
 * are taken fresh again. Returns the bytes. */
size_t hz_budget_trim(struct hz_arena *a);

/* ---- crew.c ---- the life of the library's background threads, written
 * once: the helpers and the zeroer's thread are each a crew; what its
 * threads do is their owner's. A thread slot's states, under the crew's
 * lock, and who moves them:
 *
 *   FREE -> STARTING     hz_crew_reserve, at an allocation (its caller then
 *                        makes the thread, no lock held: pthread_create allocates)
 *   STARTING -> FREE     hz_crew_started, when no thread could be made
 *   STARTING -> RUNNING  hz_crew_enter, the thread itself, lowered to
 *                        SCHED_IDLE (nice 19 where refused) before its id is published
 *   RUNNING -> FREE      hz_crew_leave_locked, the thread ending (its linger
 *                        over, a quiesce, exit, an older generation)
 *
 * The crew: allowed (from the constructor's end), ending (a quiesce in
 * flight: its threads end, none starts), never (after exit or a seccomp
 * filter), its generation (bumped by a fork's child: a thread of an
 * older one counts for nothing), and a forked child's first second, in
 * which none starts. A waiter on a thread's work raises the running ones to its own
 * scheduling (hz_crew_raise, never waiting for the crew's lock); each
 * lowers itself once idle, holding no lock (hz_crew_lower). The crew's
 * lock is never held across a system call but a raise, nor while its
 * holder waits for another lock. */

#define HZ_CREW_MAX 16
enum { HZ_CREW_FREE, HZ_CREW_STARTING, HZ_CREW_RUNNING };
struct hz_crew {
	pthread_mutex_t lock;     /* its life */
	pthread_cond_t wake;      /* its threads' sleep and end; its owner's too */
	int slot[HZ_CREW_MAX];    /* HZ_CREW_* */
	int tid[HZ_CREW_MAX];     /* a running thread's id */
	int raised[HZ_CREW_MAX];  /* raised for a wait */
	unsigned running;         /* slots not free */
	int allowed, never, ending;
	uint64_t gen, child_at;
	uint64_t starts, start_failures, sched_fallbacks;
	int sched_got;            /* what its last thread got, enum hz_sched */
};
#define HZ_CREW_INIT {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER}

/* Whether threads may start now (lock-free). */
int hz_crew_may_start(struct hz_crew *c);
/* Slots for the threads missing to want (at most HZ_CREW_MAX) taken, lock
 * held: how many the caller starts now, of generation *gen, each then
 * reported to hz_crew_started (no lock held). */
unsigned hz_crew_reserve(struct hz_crew *c, unsigned want, uint64_t *gen);
/* One thread of gen started (e 0) or not (e the error: its slot freed). */
void hz_crew_started(struct hz_crew *c, uint64_t gen, int e);
/* The calling thread, of generation gen, enters the crew: its slot, or
 * -1 when its generation is over (it ends at once). */
int hz_crew_enter(struct hz_crew *c, uint64_t gen);
/* The calling thread in slot leaves the crew (lock held), its waiters woken. */
void hz_crew_leave_locked(struct hz_crew *c, int slot, uint64_t gen);
/* Whether a thread of generation gen must end now (lock-free). */
int hz_crew_must_end(struct hz_crew *c, uint64_t gen);
/* The calling thread in slot back to SCHED_IDLE if it was raised, holding no lock. */
void hz_crew_lower(struct hz_crew *c, int slot);
/* The running threads raised to the caller's scheduling where permitted:
 * 1 when any was, 0 when none, -1 when the lock was busy (not waited for). */
int hz_crew_raise(struct hz_crew *c);
/* Every thread ends: raised, waited for at most bound_ns (a tenth of it
 * where none could be raised), the crew's lock too; none starts meanwhile, nor ever again with
 * forever. One starved past the bound keeps its slot and goes on (ends
 * when it next runs with forever). Returns the threads that were running. */
int hz_crew_quiesce(struct hz_crew *c, int forever, uint64_t bound_ns);
/* Threads may start (the constructor's end), or not. */
void hz_crew_allow(struct hz_crew *c, int allowed);
/* Before a thread is made: 1 (and never again) when the calling thread
 * runs under a seccomp filter the process did not have at the
 * constructor's end (one installed by a raw system call, which the
 * library's prctl does not see): a new thread would inherit it. Reads
 * /proc/self/status; where that cannot be read, 0. */
int hz_crew_filtered(struct hz_crew *c);
/* fork: the crew's lock held across it; in the child no thread runs, its
 * first second starts none, its counters start from zero. */
void hz_crew_fork_prepare(struct hz_crew *c);
void hz_crew_fork_parent(struct hz_crew *c);
void hz_crew_fork_child(struct hz_crew *c);
/* CLOCK_MONOTONIC ns as a timespec, for its timed waits. */
struct timespec;
void hz_crew_timespec(uint64_t at, struct timespec *ts);

/* ---- helpers.c ---- helper threads on idle cores. One large extent's work
 * at a time, a population (MADV_POPULATE_WRITE) or a fill, is cut into
 * 2 MiB steps (the huge pages it spans; the first and last may be
 * partial) claimed from a shared counter by the calling thread and by up
 * to 16 helpers at SCHED_IDLE, which only idle cores run (fewer threads
 * runnable system-wide than CPUs in the set, and than a cgroup's CPU
 * quota; never without /proc). A helper that finds an offer 2 ms late
 * takes no step, one preempted in a step takes no more. Helpers start and
 * wake at an allocation (which may make system calls); after one, and
 * after each job, they poll for offers for a second (every 100 us for
 * 20 ms, then every ms), so that memset can offer work with one
 * compare-and-swap, no system call and no lock.
 * Work is owned by its block or its memset: whoever ends it
 * (hz_job_end) waits only for the steps in flight, raising the helpers to
 * its own scheduling where that is permitted. Never in a forked child's
 * first second; they end after 10 s without a job, at exit, and before a
 * call that needs the process single-threaded (hz_helpers_quiesce).
 * HUGEZERO_THREADS. */

#define HZ_JOB_STEP HZ_HUGE_SIZE
/* Extents from this size are worth the helpers. */
#define HZ_HELPERS_MIN ((size_t)64 << 20)
enum { HZ_JOB_POPULATE, HZ_JOB_FILL };
struct hz_job {
	/* Its owner's, written before it is offered, read-only while it is
	 * (the offer publishes them). */
	int kind;
	unsigned char *p;       /* the extent */
	size_t size;
	uintptr_t first;        /* its first step's start, aligned down to a step */
	size_t steps;
	/* Steps left alone: s % skip_every == skip_at (skip_every not 0),
	 * and [skip_lo, skip_hi). */
	size_t skip_every, skip_at, skip_lo, skip_hi;
	int c;                  /* a fill's byte, and kernel */
	unsigned kernel;
	int early;              /* the caller left the rest to a helper */
	/* Shared, atomic. */
	uint64_t next;          /* the generation (high bits), the next step to claim (low bits) */
	uint32_t gen;           /* the generation: bumped by init and end; a claim of another fails */
	int in_step;            /* helpers in a step (or about to claim one) */
	int holders;            /* helpers that took the job off the offer and still hold it */
	int closed;             /* helpers take no step from now on */
	int failed;             /* a population's errno */
	size_t done, helper_done; /* bytes */
};
/* The steps [p, p + size) spans: the huge pages it touches. */
static inline size_t hz_job_span(const void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(HZ_JOB_STEP - 1);
	return (hz_round_up((uintptr_t)p + size, HZ_JOB_STEP) - a) / HZ_JOB_STEP;
}
/* j: kind's work on [p, p + size) in a new generation, no step
 * claimable until hz_job_open (its owner sets its other fields between);
 * only a job off the offer and ended (or never used). */
void hz_job_init(struct hz_job *j, int kind, void *p, size_t size);
/* j's steps claimable from now on, every field written before seen. */
void hz_job_open(struct hz_job *j);
/* The steps claimed so far. */
size_t hz_job_claimed(const struct hz_job *j);
/* Step s of j, [*lo, *hi). */
void hz_job_step_range(const struct hz_job *j, size_t s, unsigned char **lo, unsigned char **hi);
/* Whether j leaves step s alone. */
int hz_job_left_alone(const struct hz_job *j, size_t s);
/* The calling thread's steps of generation gen (j->gen at its init),
 * claimed one at a time until none is left, j is ended or a population
 * fails; with early set, until early steps were claimed and a helper
 * holds j (j->early then set: the rest is the helpers'). The bytes done. */
size_t hz_job_steps(struct hz_job *j, uint32_t gen, int helper, size_t early);
/* Offers j to the helpers, starting or waking them: 1, or 0 when another
 * job is on offer, no core is idle or no helper may run. An allocation's
 * path (system calls). A helper that leaves j takes it off the offer. */
int hz_helpers_offer(struct hz_job *j);
/* Takes j off the offer: no helper takes it from now on. */
void hz_helpers_withdraw(struct hz_job *j);
/* Starts the missing helpers and has them poll (a large block was
 * allocated: its memsets may find them). */
void hz_helpers_start(void);
/* Ends j: off the offer, no step claimed from now on, the helpers' steps
 * in flight waited for (spinning, then with the helpers raised to the
 * caller's scheduling where permitted); with bound, at most 100 ms.
 * 1 when no step is in flight, 0 when the bound passed. */
int hz_job_end(struct hz_job *j, int bound);
/* memset(p, c, size) split over the calling thread and the helpers,
 * every byte written before it returns: 1 with the kernel it ran in
 * *used (as split fills learn it, arch/learn.c), or 0 (nothing written)
 * below HZ_HELPERS_MIN or when no helper may take part. With
 * may_start (an allocation's clear) helpers are started and woken; without
 * (memset, which may run in a signal handler that interrupted malloc) no
 * system call is made and no lock taken: only helpers polling take part.
 * Only on memory of the arenas that the program never protected: a fault
 * in a helper's step would not reach the program's handler; refused (or
 * NULL) is the block's mark of a protection, read again once the fill is
 * published (hz_large_protected ends fills after it sets it). A memset
 * nested in a split one of the same thread (a signal handler's) is not
 * split. */
int hz_helpers_fill(void *p, int c, size_t size, int may_start, const int *refused, unsigned *used);
/* The calling thread leaves its frames by a jump (longjmp from a signal
 * handler): its split fill in flight, if any, ends (its helpers' steps
 * waited for), so that nothing writes after the jump. */
void hz_helpers_jumped(void);
/* [p, p + size) ends its life (a block's free, resize or unmap): every
 * fill in it is ended first. One load when no fill is in flight. */
void hz_helpers_end_in(const void *p, size_t size);
/* nthreads: the caller and its helpers, 0 for the CPU set's size (1: no
 * helper). At setup. */
void hz_helpers_setup(unsigned nthreads);
/* Helpers may start from now on (the constructor's end). */
void hz_helpers_allow(void);
/* Every helper ends (raised to the caller's scheduling where permitted),
 * waited for at most bound_ns; none starts until it returns, and never
 * again with forever (exit, a seccomp filter); one starved past the bound
 * goes on. Returns the helpers that were running. */
int hz_helpers_quiesce(int forever, uint64_t bound_ns);
/* Exit has begun: hz_helpers_quiesce(forever, 20 ms). */
void hz_helpers_exit(void);
void hz_helpers_fork_prepare(void);
void hz_helpers_fork_parent(void);
void hz_helpers_fork_child(void);
struct hz_helpers_stats {
	uint64_t populated, filled;  /* bytes the helpers did */
	uint64_t fills;              /* fills split over them */
	uint64_t starts, start_failures, sched_fallbacks;
	uint64_t raised_waits;       /* waits that raised them */
	uint64_t bounded_waits;      /* waits that ended at their bound, a step still in flight */
	uint64_t busy;               /* offers not made: no idle core */
	uint64_t late, preempted;    /* helpers that left a job: woke late, preempted in a step */
	unsigned threads, helpers;
};
void hz_helpers_stats(struct hz_helpers_stats *out);

/* ---- run.c ---- blocks up to HZ_RUN_MAX, page runs in the arenas'
 * chunks. calloc clears only a block's dirty runs, outside the lock. */

/* A run of npages pages, its first page's index in its chunk a multiple
 * of align (a power of two up to HZ_HUGE_PAGES), in the calling thread's arena, a new chunk mapped
 * when none has room; where no chunk can be mapped (an address-space
 * limit), a run in another arena's chunks. With zero set its bytes read
 * as zero. out->refill is set when the block took pages of the reserve
 * or pages not in memory (the zeroer has a reserve to refill), else left;
 * out->fresh gets the bytes of it not in memory. With out->populate set
 * it is watched (fresh.c) as a populated block is. NULL when no arena has
 * room and no chunk can be mapped. */
struct hz_handout {
	int populate; /* in: its pages will be populated (populate.c) */
	int refill;
	size_t fresh;
};
void *hz_run_alloc(size_t npages, size_t align, int zero, struct hz_handout *out);
/* The length in bytes of the live block at p in chunk c, or 0. */
size_t hz_run_usable(struct hz_chunk *c, const void *p);
/* Frees the live block at p in chunk c: 0 when dirty memory went back
 * to a chunk (the block, or older kept blocks making room for it), 1 when
 * it is kept whole for a malloc of its length (hz_run_take_kept: up to
 * HZ_RUN_KEEP_MAX, neither cleared nor grown) and nothing else changed,
 * or -1 when p is not a live block. cleared: its
 * bytes were made zero (hardened mode): its pages are clean, but for its
 * last fresh_tail, which are not in memory either (a guard span given
 * back): fresh. grown: realloc moved its bytes to a larger block
 * (hz_budget_freed). */
int hz_run_free(struct hz_chunk *c, void *p, int cleared, size_t fresh_tail, int grown);
/* A block of npages kept by the calling thread's arena, aligned to align
 * bytes, taken as it was freed (its bytes as the program left them: for
 * malloc, never calloc): no fit, no page state to change. NULL when
 * there is none, or the arena's lock is busy. */
void *hz_run_take_kept(size_t npages, size_t align);

/* Resizes the live block at p in chunk c (old bytes) to size bytes in
 * place: 0, or -1 when the pages after it are not free. */
int hz_run_resize(struct hz_chunk *c, void *p, size_t old, size_t size);

/* ---- huge_cache.c ---- huge blocks served from their arenas: a cached
 * free block that fits best (cut to size when much larger), or a new
 * mapping; after free, kept in the arena's cache within the dirty budget
 * (budget.c). Resized in place within their mapping, or moved by the
 * kernel. */

/* A huge block of at least size bytes (HZ_RUN_MAX < size <=
 * HZ_HUGE_MAX; or smaller, where no chunk could be mapped) from the
 * calling thread's arena: a cached one, or a new mapping of whole huge
 * pages (of whole pages where that much cannot be mapped: an
 * address-space limit); with zero set its bytes read as zero. A new
 * mapping sets out->refill and out->fresh (its bytes). NULL when memory
 * is out. */
void *hz_huge_cache_alloc(size_t size, int zero, struct hz_handout *out);
/* Frees h into its arena's cache: 0, or -1 when it is not live.
 * cleared: its usable bytes were made zero (hardened mode, where every
 * free clears and every shrink clears what it gives up, so the rest of
 * its mapping is zero too): it is known zero. grown: as hz_run_free's. */
int hz_huge_cache_free(struct hz_huge *h, int cleared, int grown);
/* Its usable size, or 0 when it is not live. */
size_t hz_huge_cache_usable(struct hz_huge *h);
/* Resizes it in place to size bytes (> HZ_RUN_MAX), within its
 * mapping: 0, or -1. */
int hz_huge_cache_resize(struct hz_huge *h, size_t size);
/* Moves it to a mapping of size bytes without copying (mremap): the new
 * place, or NULL (h unchanged) when the kernel cannot. */
void *hz_huge_cache_move(struct hz_huge *h, size_t size);

/* ---- zeroer.c: the work ---- the zeroer's work, one piece at a time (claim.c):
 * freed memory pre-cleared first (it adds no memory), then the reserve,
 * free pages not in memory populated up to what the program has been
 * taking fresh (budget.c's hz_budget_reserve_max at most), only while the
 * program takes no page faults, and only while what it populated is used
 * rather than released unused; and the decay, for
 * memory no free would otherwise revisit. Run by the zeroer's thread
 * (zeroer.c), never by the allocator's calls. */

/* Claims, clears or populates and publishes one piece in some arena,
 * taking and releasing the arenas' locks: 1 when there was one, 0 when
 * there is none, HZ_WORK_DEFERRED when only the reserve is left to fill
 * and the program is taking page faults (touching memory): populating
 * now would compete with them; ask again in a while. HZ_WORK_BUSY when
 * dirty memory is left in an arena where the program took or freed a
 * large block since the last look (it may take that memory again at
 * once): nothing else is done then (the reserve neither); ask again a
 * little later. */
#define HZ_WORK_DEFERRED 2
#define HZ_WORK_BUSY 3
int hz_work_once(void);
/* The decay in every arena (hz_budget_bound); 1 when any arena still
 * holds free memory in memory after it. */
int hz_work_decay(void);

/* Set at the first fork, in parent and child (fork_locks.c): pages may be
 * shared copy-on-write from then on, and a clear of one would copy it,
 * so only the pages /proc/self/pagemap says this process maps alone are
 * cleared; where it cannot say, none. */
extern int hz_work_forked;

struct hz_work_counts {
	uint64_t cleared, populated; /* bytes published as clean */
	uint64_t abandoned;          /* bytes of pieces taken before they were done */
	uint64_t not_resident;       /* bytes of freed pieces left uncleared: not in memory, zero */
};
extern struct hz_work_counts hz_work_n;

/* ---- zeroer.c: the thread ---- the background zeroer's thread, at the top of the
 * allocator with fork: it runs the work (zeroer.c) at SCHED_IDLE (nice 19
 * where that is refused), sleeps when there is none, runs the decay every
 * 250 ms while the arenas hold free memory, runs fresh memory's probe
 * when it is due (fresh.c), and ends a second after it has nothing left
 * to do. It starts at the first large free or calloc (or allocation with
 * the probe due),
 * from the allocator's entry (large.c) with no lock held, once the
 * library's constructor has allowed it, never once exit has begun; a
 * forked child has none until it has lived a second. When and why:
 * docs/design.md, "The background zeroer". */

/* Whether the zeroer may run (HUGEZERO_BACKGROUND); set once at setup. */
extern int hz_zeroer_enabled;

/* After a large free or calloc (may_start 1) or malloc, with no lock
 * held: starts the zeroer the first time it may, and wakes it when wake is
 * set (memory freed, or the reserve drawn on). */
void hz_zeroer_kick(int may_start, int wake);
/* The library's constructor has run: the zeroer may start. */
void hz_zeroer_allow(int allowed);
/* Exit has begun (the library's destructor): no zeroer starts again, and
 * a running one is raised back to normal priority where permitted, asked
 * to end and waited for at most 200 ms (20 ms unraised), so that the
 * process's memory is torn down by a thread of normal priority. */
void hz_zeroer_exit(void);
/* The zeroer's thread ends (raised to normal priority where permitted),
 * waited for at most bound_ns (a tenth of it where it could not be
 * raised); unless forever it may start again at the next kick; one
 * starved past the bound goes on. Returns 1 when it was
 * running. */
int hz_zeroer_quiesce(int forever, uint64_t bound_ns);

struct hz_zeroer_stats {
	int running, sched;          /* sched: enum hz_sched, while running */
	uint64_t starts, start_failures, sched_fallbacks;
	uint64_t cleared, populated; /* bytes published as clean */
	uint64_t abandoned;          /* bytes of pieces taken before they were done */
	uint64_t not_resident;       /* bytes of freed pieces not cleared: not in memory, zero */
	uint64_t waits;              /* handouts that waited for a piece */
	uint64_t cpu_ns;             /* the thread's CPU time */
	uint64_t wakeups;
	uint64_t exits;              /* the thread ended, idle for a second (or at exit) */
};
void hz_zeroer_stats(struct hz_zeroer_stats *out);

/* fork (fork_locks.c): the thread's lock, taken first; in the child no thread
 * runs and the counters start from zero. */
void hz_zeroer_fork_prepare(void);
void hz_zeroer_fork_parent(void);
void hz_zeroer_fork_child(void);

/* ---- populate.c ---- fresh blocks populated where the program will touch
 * them: one MADV_POPULATE_WRITE per 2 MiB step (helpers.c) instead of a
 * fault per page. Decided per size class (a quarter of a power of two,
 * from 2 MiB) from the share of recent blocks' pages the program touched,
 * read with mincore at a block's free, or at a large allocation once it
 * has been handed out 10 ms plus its size at 2 GiB/s (a block never
 * freed); a block of 16 steps or more on whole huge pages keeps one step
 * in 16 unpopulated (a sentinel) for that reading, a smaller one is left
 * unpopulated one time in 8. Never near a memory cgroup's limit. From
 * HZ_HELPERS_MIN the helpers take steps beside the caller; a calloc
 * (zero set) returns once it populated the first eighth and a helper
 * took a step: the rest is theirs, ahead of the program. A block's free ends its population,
 * waiting for a step in flight (one a helper at most), so no page is
 * populated after it. HUGEZERO_POPULATE. */

enum { HZ_POPULATE_AUTO = -1, HZ_POPULATE_OFF = 0, HZ_POPULATE_ON = 1 };
/* mode: HZ_POPULATE_*. At setup. */
void hz_populate_setup(int mode);
/* Whether a fresh block of size bytes (whole pages) is to be populated:
 * always (HZ_POPULATE_ON), or where its class's recent blocks were mostly
 * touched. Reads one tracked block that is due, never waiting. No lock
 * held. */
int hz_populate_wanted(size_t size);
/* The block p of size bytes (whole pages) was handed out with fresh bytes
 * not in memory: populated when wanted (hz_populate_wanted's answer) and
 * its memory cgroup is not near its limit, else tracked to be read for
 * its class. No lock held. */
void hz_populate_block(void *p, size_t size, size_t fresh, int wanted, int zero);
/* p is freed or resized: its population ended (a step in flight waited
 * for), its touched share read. Before the block changes hands. */
void hz_populate_freed(const void *p);
void hz_populate_fork_child(void);
struct hz_populate_stats {
	uint64_t bytes, blocks;       /* populated */
	uint64_t untouched_bytes;     /* populated, never touched by the program (estimated at the read) */
	uint64_t program_faulted_bytes; /* of populated blocks' sentinels, faulted in by the program */
	uint64_t samples;             /* blocks read for their class */
	uint64_t explored;            /* blocks of a dense class left unpopulated to be read */
	uint64_t pressed;             /* blocks not populated near a cgroup's limit */
	uint64_t untracked;           /* blocks no slot was left for */
	uint64_t early;               /* blocks whose caller left the rest to the helpers */
	int mode;
};
void hz_populate_stats(struct hz_populate_stats *out);

/* ---- hardened.c ---- HUGEZERO_HARDENED: every block's bytes zero
 * before free returns (as Linux's init_on_free does for the kernel), a
 * guard page after every large block, and small blocks held a while in
 * a quarantine where a second free of one is caught. The arenas' freed
 * blocks are then known zero, so calloc clears nothing recycled. */

/* Set once at setup: 1 in hardened mode. */
extern int hz_hardened;
/* Whether a large block of size bytes is, in hardened mode, whole huge
 * pages followed by a huge page's guard span (large.c): from a huge page
 * up, except where every mapping counts against a limit. */
static inline int hz_hardened_huge(size_t size)
{
	return hz_hardened && !hz_huge_fitted && size > HZ_HUGE_SIZE - HZ_PAGE;
}
/* Sets the mode, before any block (the small engine's part:
 * hz_small_harden). */
void hz_hardened_setup(int on);
/* Makes the n bytes at p zero, counted; a large block's (page-aligned)
 * 2 MiB steps with no page in memory are left alone (they read zero). */
void hz_hardened_clear(void *p, size_t n, int large);
/* A large block handed out from freed pages, which free cleared: its
 * first 64 bytes still zero, or a write after free is reported (abort). */
void hz_hardened_reused(const void *p);
/* The size bytes at p become a guard (on) or ordinary memory reading
 * zero; a guard that cannot be installed is counted, not fatal. */
void hz_hardened_guard(void *p, size_t size, int on);
/* Whether a guard page could not be installed, ever. */
int hz_hardened_guard_failed(void);

/* The quarantine's evictions: blocks to free now. */
struct hz_evicted {
	unsigned count;
	void *p[33];
	size_t n[33];
};
/* Holds the freed block p (n bytes, cleared) in its shard, evicting the
 * oldest into *out beyond the shard's room (p itself when it is larger
 * than a shard holds): 0, or -1 when p is held already (freed twice). */
int hz_quarantine_put(void *p, size_t n, struct hz_evicted *out);
/* Whether p is held (freed and not yet handed back). */
int hz_quarantine_holds(const void *p);
/* fork: every shard's lock around it (preload/fork_handlers.c). */
void hz_quarantine_fork_prepare(void);
void hz_quarantine_fork_parent(void);
void hz_quarantine_fork_child(void);
void hz_hardened_counters(hz_counter_fn fn, void *arg);

/* ---- large.c ---- the hugepage arenas' entry, the one the exported
 * ABI calls for large blocks: routes each call to the blocks in chunks
 * (run.c) or to the huge blocks (huge_cache.c), applies the limits
 * (limits.c: the largest block, a memory cgroup's pressure relieved) and
 * kicks the zeroer with what the call left it to do. Configured by
 * hz_large_setup; knows nothing of the exported ABI or of options. */

struct hz_large_cfg {
	size_t dirty_max;        /* free dirty bytes an arena keeps */
	uint64_t dirty_decay_ms; /* how long it keeps them */
	int thp;                 /* ask for transparent huge pages */
	enum hz_fresh_mode fresh; /* and for fresh memory, when (fresh.c) */
	int hugetlb;             /* chunks from the hugetlb pool when it can */
	int calloc_release;      /* calloc releases dirty runs instead of clearing them */
	int background;          /* the background zeroer may run (zeroer.c) */
	size_t reserve;          /* and keeps this many bytes of clean pages */
	int populate;            /* HZ_POPULATE_* (populate.c) */
	unsigned threads;        /* the helpers' and the caller's, 0: the CPU set's (helpers.c) */
	int hardened;            /* HUGEZERO_HARDENED (hardened.c) */
};
/* Configures the arenas; at the first allocation, before any block. The
 * limits (limits.c) are read here: in a memory cgroup the dirty budget
 * is at most an eighth of its limit and the reserve a thirty-second. */
void hz_large_setup(const struct hz_large_cfg *cfg);

/* The largest block anyone could serve here (hz_limits_max_block, at
 * most HZ_HUGE_MAX and a quarter of the window): a larger request fails
 * with ENOMEM, as glibc's mmap does. Set by hz_large_setup. */
extern size_t hz_block_max;

/* Set when the arenas gave their free memory back near a memory cgroup's
 * limit: whoever holds other free memory (the small engine) gives it
 * back too, and clears it. */
extern int hz_large_pressed;

/* A block of at least size bytes (0 < size <= hz_block_max), aligned
 * to align (a power of two from HZ_PAGE to HZ_HUGE_SIZE: chunks and huge
 * blocks are chunk-aligned, so a run is placed on the alignment); with
 * HZ_LARGE_ZERO in how its bytes read as zero, cleared only where pages
 * were dirty (a recycled huge block is cleared whole, hinted at its first
 * page); with HZ_LARGE_NOT_KEPT, never a kept block (a calloc's A arm,
 * which clears the block itself and is compared with arm B, which never
 * takes one); with neither, a kept block of its length first. NULL with
 * errno ENOMEM when size is out of range or memory is exhausted. Near a
 * memory cgroup's limit, the arenas give their free memory back first
 * (not read where a kept block serves). */
#define HZ_LARGE_ZERO 1
#define HZ_LARGE_NOT_KEPT 2
void *hz_large_alloc_aligned(size_t size, size_t align, int how);
static inline void *hz_large_alloc(size_t size, int zero)
{
	return hz_large_alloc_aligned(size, HZ_PAGE, zero);
}

/* Whose a pointer is, found once (one registry lookup, no lock) and
 * handed to every call below: a chunk's, a huge block's, or neither
 * (someone else's memory). */
struct hz_owner {
	struct hz_chunk *chunk;
	struct hz_huge *huge;
};
static inline struct hz_owner hz_large_owner(const void *p)
{
	uintptr_t e = hz_reg_get(p);
	struct hz_owner o = {0, 0};
	if (!(e & HZ_REG_HUGE)) /* none, or a chunk, which fills its slot */
		o.chunk = (struct hz_chunk *)e;
	else if (hz_huge_holds(p, e))
		o.huge = (struct hz_huge *)(e & ~HZ_REG_HUGE);
	return o;
}
/* Whether the pointer o was found for lies in memory of the arenas (a
 * chunk or a huge block). Memory outside is someone else's. */
static inline int hz_large_owns(struct hz_owner o)
{
	return o.chunk || o.huge;
}
/* The usable size of the live block at p (whose owner is o), or 0 when p
 * is not one. */
size_t hz_large_usable(struct hz_owner o, const void *p);
/* Frees the live block at p: 0, or -1 when p is not a live block (a
 * foreign pointer, or one freed already): the caller reports it. */
int hz_large_free(struct hz_owner o, void *p);
/* Resizes the live block at p, of old usable bytes (hz_large_usable), to
 * size bytes (0 < size <= hz_block_max): in place when its chunk has the
 * pages after it free (or it shrinks); otherwise a new block, chunk
 * blocks copied, huge blocks moved by the kernel (mremap) without copying
 * a byte. Returns the block, or NULL with errno ENOMEM (p untouched). */
void *hz_large_realloc(struct hz_owner o, void *p, size_t old, size_t size);
/* Resizes the live block at p to size bytes only where it stays in place
 * (jemalloc's xallocx); returns its usable size after, or 0 when p is not
 * a live block. */
size_t hz_large_resize(struct hz_owner o, void *p, size_t size);
/* The usable size hz_large_alloc(size) gives (whole pages; whole huge
 * pages for hardened mode's blocks from a huge page), or 0 when size is
 * out of range. */
static inline size_t hz_large_good_size(size_t size)
{
	if (!size || size > hz_block_max)
		return 0;
	return hz_round_up(size, hz_hardened_huge(size) ? HZ_HUGE_SIZE : HZ_PAGE);
}

/* The program changes the protection of [p, p + len) (mprotect,
 * pkey_mprotect, a guard of its own), before it does: every live huge
 * block there is marked, so that no helper ever writes it (a fault in a
 * helper's step would not reach the program's SIGSEGV handler). Lock-free;
 * for any range, the arenas' or not. */
void hz_large_protected(const void *p, size_t len);
/* Releases every free dirty page of every chunk, partial huge pages
 * included, and unmaps every cached and retained huge block (malloc_trim); returns the
 * bytes released. */
size_t hz_large_trim(void);

/* The arenas' figures, for tests and reports. */
struct hz_large_stats {
	size_t chunks, allocated_bytes, calloc_bytes_known_zero, huge_cached_bytes;
	size_t dirty_free_bytes, purged_bytes;
	uint64_t allocs, callocs, calloc_bytes, frees;
	uint64_t purges, purge_ranges, purge_syscalls, purge_fallbacks; /* purges: batches */
	uint64_t hugetlb_chunks, hugetlb_fallbacks;
	uint64_t thp_advised, thp_refused;
	uint64_t cleared_caller, reserve_hits, reserve_misses;
	size_t reserve_bytes; /* free clean pages: pre-cleared or populated */
	uint64_t reserve_unused_bytes; /* the zeroer's work released before a block took it */
	uint64_t pressure_checks, pressure_releases, pressure_bytes; /* near the cgroup's limit */
	uint64_t refaulted_bytes, refaults; /* handed out again after a release; the faults that cost */
	size_t kept_bytes;                  /* chunk blocks freed and kept whole (part of dirty_free_bytes) */
	uint64_t kept_taken;                /* blocks handed out from them */
	size_t retained_bytes;              /* huge blocks released, their mappings kept */
	uint64_t retained_taken;            /* blocks handed out from them */
};
void hz_large_stats(struct hz_large_stats *out);
/* The same, by name, for the report (an obs.h source). */
void hz_large_counters(hz_counter_fn fn, void *arg);

/* ---- fork_locks.c ---- fork, for the whole allocator, at the top of its
 * room with the zeroer's thread. Called by the library's one set of fork
 * handlers, never registered here. The prepare takes every lock of the
 * allocator in the one order in which the allocator nests them:
 *
 *   the zeroer's crew lock (zeroer.c, crew.c), the helpers' crew lock
 *   (helpers.c, crew.c; held with no other, never across a system call
 *   but a raise; a waiter on their work only tries it), every arena's lock in index
 *   order (arena.c), the huge descriptors' pool lock (huge.c), the
 *   registry's writers' lock (registry.c), fresh memory's watch lock
 *   (fresh.c; held with no other)
 *
 * and no spin flag: the helpers' offer and fill slots, and population's
 * slots (a state machine, populate.c), are compare-and-swap states whose
 * holders never wait on a lock while they hold one; fresh.c's probe flag
 * is a try-flag no one waits for; hardened mode's quarantine shards
 * (hardened.c) are spin locks, leaves held for one scan, taken before
 * all of these by the library's fork handlers;
 *
 * and parent and child release them, so a child forked while other
 * threads allocate finds no lock held by a thread it does not have. The
 * state (blocks, chunks, free memory) is inherited as it is; the claim in
 * flight is dropped (its pages stay dirty), no zeroer thread runs, and
 * the child's counters start from zero, its report being its own; no
 * helper runs and no block is tracked for population. Calls zeroer.c,
 * helpers.c, populate.c, claim.c, arena.c, huge.c, fresh.c and
 * registry.c. */

void hz_allocator_fork_prepare(void);
void hz_allocator_fork_parent(void);
void hz_allocator_fork_child(void);

/* ---- small.c ---- small blocks, and where they end. Blocks below
 * hz_large_threshold go to jemalloc; the library carries its own copy, built
 * from Debian's static archive with every symbol renamed hz_je_*
 * (scripts/jemalloc-rename.sh): its malloc symbols never become the
 * program's, and the program's mallocx & co. (which hugezero exports,
 * routed by owner) never reach it by name. small.c (in the library, with
 * jemalloc) is the glue: calloc cleared in place, figures, purges;
 * small_fork.c its fork handlers. */

/* Blocks from hz_large_threshold bytes up go to the hugepage arenas (large.c),
 * smaller ones to jemalloc: one compare on malloc's path. 0 until the
 * allocator is configured, so that the first call takes the slow path,
 * which configures it (and stays 0 while the library forwards to glibc:
 * every call then takes the slow path); SIZE_MAX where pages are not
 * 4 KiB, which the arenas assume. */
extern size_t hz_large_threshold;
/* A plain load, one compare with the size on the fast paths. Whoever
 * sees the threshold the start published also sees the small engine's
 * table it set before: on x86-64 loads are not reordered with loads, and
 * elsewhere the start makes every running thread pass a barrier between
 * the two stores (hz_os_barrier_threads). */
static inline size_t hz_threshold(void)
{
	return hz_large_threshold;
}
static inline int hz_route_large(size_t size)
{
	return size >= hz_threshold();
}

/* The small engine: every small block's call goes through this table
 * (the fast paths' direct call becomes a call through one load: no
 * instruction more). The embedded jemalloc's by default; the next
 * allocator's in the link order with HUGEZERO_SMALL=next
 * (hz_small_use_next), set at the allocator's start, before any block.
 * Flags are jemalloc's mallocx flags. */
struct hz_small_engine {
	void *(*malloc)(size_t size);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t size);
	void (*free)(void *p);
	size_t (*usable)(void *p);
	void *(*mallocx)(size_t size, int flags);
	void *(*rallocx)(void *p, size_t size, int flags);
	size_t (*xallocx)(void *p, size_t size, size_t extra, int flags);
	size_t (*nallocx)(size_t size, int flags);
	void (*dallocx)(void *p, int flags);
	void (*sdallocx)(void *p, size_t size, int flags);
	int jemalloc; /* 1: the embedded jemalloc's (its figures, its calloc cleared in place) */
};
extern struct hz_small_engine hz_small;
/* The next allocator's malloc family (functions of another library):
 * every one but trim required. */
struct hz_small_next {
	void *(*malloc)(size_t size);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t size);
	void (*free)(void *p);
	size_t (*usable)(void *p);
	int (*memalign)(void **out, size_t align, size_t size); /* posix_memalign */
	int (*trim)(size_t pad);                                /* malloc_trim, or NULL */
	/* jemalloc's control and statistics interface, where it is a jemalloc
	 * (Redis reads its figures through it), or NULL. */
	int (*mallctl)(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
	void (*stats_print)(void (*write_cb)(void *, const char *), void *cbopaque, const char *opts);
	int (*nametomib)(const char *name, size_t *mibp, size_t *miblenp);
	int (*bymib)(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
};
/* The next allocator's jemalloc interface under HUGEZERO_SMALL=next,
 * where it has all four; every member NULL otherwise (the embedded
 * jemalloc's then answer). */
extern struct hz_small_next hz_small_ctl;
/* Small blocks from now on go to fns: 0, or -1 (nothing
 * changed) when one it requires is missing. At the allocator's start. */
int hz_small_use_next(const struct hz_small_next *fns);
/* Starts the embedded jemalloc (its constructor is dropped: see
 * scripts/jemalloc-rename.sh), at the allocator's start where it serves
 * the small blocks: set up before the program's threads can fork
 * half-way through its start. Its tables' pages are made writable first
 * (their segment is read-only: preload/tables.ld): 0, or the errno that
 * refused it (EAGAIN where jemalloc cannot start: no pthread key left for
 * its thread data), and jemalloc does not serve. lazy_tcache: where the
 * thread cache in front will make each thread's jemalloc thread cache as
 * its calls come (hz_small_cache_install), jemalloc makes none at a
 * thread's first call; not where MALLOC_CONF or /etc/malloc.conf is set. */
int hz_small_start(int lazy_tcache);
/* 1 where jemalloc was so started (its opt.tcache false by the library's
 * choice, not the program's). */
int hz_small_tcache_lazy(void);
/* Where the embedded jemalloc is not started at the allocator's start, the
 * pages of its zeroed tables (its radix tree's root, 2 MiB of the image)
 * are given back: under an address-space limit they would cost the
 * program 2 MiB of its blocks. hz_small_tables_back maps them again, zero
 * as the loader left them, before a call to its control interface starts
 * it after all: 0, or EAGAIN (what its mallctl answers when it cannot
 * start) when they cannot be, or when jemalloc could not start at the
 * allocator's start (hz_small_start). */
void hz_small_release_tables(void);
int hz_small_tables_back(void);
/* Makes the tables' pages writable (hz_small_start does, first): 0, or an
 * errno. */
int hz_small_tables_writable(void);
/* The tables' lock (small_fork.c), a leaf held around one mmap: its fork
 * handlers take it before a fork and let it go in parent and child. */
void hz_small_tables_lock(void);
void hz_small_tables_unlock(void);
/* The thread cache (small_cache.c): per thread, stacks of free blocks of
 * jemalloc's classes up to HZ_CACHE_MAX (malloc's fast path), and a
 * block kept of each of its large ones on to HZ_CACHE_BIG_MAX (its slow
 * path), from an arena of its own placed in a region of its own, from
 * HZ_CACHE_BASE on (above the arenas' window), and after it a table of
 * each page's class. Installed
 * in the small engine's table over the embedded jemalloc, at the
 * allocator's start (before hardened mode's): 0, or -1 where it is not
 * (another engine, or jemalloc's classes not as assumed). lazy_tcache
 * (hz_small_tcache_lazy): jemalloc makes no thread cache of its own, and
 * the cache makes a thread's as its calls come. */
#define HZ_CACHE_MAX 65536 /* jemalloc's small classes (to 14 KiB) and its large ones to 64 KiB */
#define HZ_CACHE_BIG_MAX (1 << 20) /* jemalloc's large classes above it, to 1 MiB (its tcache_max, small.c) */
#define HZ_CACHE_CLASSES 64 /* and the last, no class's: see small_cache.c */
#define HZ_CACHE_BASE ((uintptr_t)1 << 45)               /* 32 TiB */
#define HZ_CACHE_SPAN ((uintptr_t)1 << 40)               /* 1 TiB */
#define HZ_CACHE_TABLE (HZ_CACHE_BASE + HZ_CACHE_SPAN)  /* a byte per page of it */
#define HZ_CACHE_PAGE_SHIFT 12
int hz_small_cache_install(struct hz_small_engine *e, int lazy_tcache);
/* jemalloc's control interface as the program calls it (by name, or
 * by mib where name is NULL), where the cache makes the threads' jemalloc
 * caches (lazy_tcache): the calling thread's made first, so that
 * thread.tcache.* answer as under jemalloc alone; opt.tcache read as
 * the configuration the program asked for, true, answered here: 0.
 * Else -1, and the call is jemalloc's. */
int hz_small_cache_ctl(const char *name, const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
		       void *newp);
/* Before a call of jemalloc's outside the table (small.c's
 * hz_small_calloc): the calling thread's jemalloc thread cache made, where
 * the cache makes them (lazy_tcache). */
void hz_small_cache_je_first(void);
/* Gives back the transfer caches' blocks and the calling thread's to
 * jemalloc (malloc_trim's). */
void hz_small_cache_trim(void);
/* A class's lock (small_fork.c): the fork handlers take them all first. */
void hz_small_cache_lock(unsigned c);
void hz_small_cache_unlock(unsigned c);
/* The lock around the class table's growth (small_fork.c), taken inside
 * jemalloc's hooks: the fork handlers take it after jemalloc's locks. */
void hz_small_cache_table_lock(void);
void hz_small_cache_table_unlock(void);
/* A thread cache's count of the blocks malloc took from it, per class,
 * on the heap; linked while its thread caches (small_fork.c keeps the
 * list, which a forked child restarts with its own thread's alone, the
 * others' counts folded). Unlinked, its counts are folded into the gone
 * threads'. */
struct hz_cache_calls {
	uint64_t calls[HZ_CACHE_CLASSES];
	struct hz_cache_calls *prev, *next;
};
void hz_small_cache_link(struct hz_cache_calls *k);
void hz_small_cache_unlink(struct hz_cache_calls *k);
/* The calls of every thread's cache, live or gone, per class, into
 * calls[HZ_CACHE_CLASSES]. */
void hz_small_cache_calls(uint64_t *calls);
/* Those calls summed over jemalloc's small classes (*small) and over its
 * large classes the cache serves (*large), as jemalloc's statistics
 * split them; 0 and 0 without the cache. */
void hz_small_cache_split(uint64_t *small, uint64_t *large);
/* Hardened mode (small_hardened.c): the small engine's table wrapped, so
 * every block carries a tag and a canary, is cleared at free and held in
 * the quarantine; at the allocator's start, before any block. */
void hz_small_harden(void);

/* The embedded jemalloc's pthread_atfork (scripts/jemalloc-rename.sh
 * renames its call), in small_fork.c: its handlers are kept, and run by
 * the library's one set of fork handlers through these three. */
int hz_je_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
void hz_small_fork_prepare(void);
void hz_small_fork_parent(void);
void hz_small_fork_child(void);
/* Its madvise (renamed so too), in small_purge.c: MADV_DONTNEED only
 * where a purge was asked for (hz_small_trim, hz_small_mallctl of an
 * arena's purge, reset or destruction): jemalloc frees lazily then.
 * hz_small_purge_started: from the end of jemalloc's start on. */
int hz_je_madvise(void *p, size_t len, int advice);
/* The thread caches' call of jemalloc's arena_decay (renamed so too):
 * never a purge of all at a thread's exit. */
void hz_je_tcache_decay(void *tsdn, void *arena, _Bool is_background_thread, _Bool all);
void hz_small_purge_started(void);
/* jemalloc's mallctl, its arenas' purges releasing at once. */
int hz_small_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
/* Its heap profiling's log, exp and round, libm's functions, and its
 * unwinder's two, libgcc_s's (small_libs.c): so that neither library is
 * loaded for them. */
double hz_je_log(double x);
double hz_je_exp(double x);
double hz_je_round(double x);
struct _Unwind_Context;
int hz_je_unwind_backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg);
uintptr_t hz_je_unwind_getip(struct _Unwind_Context *ctx);

#pragma GCC visibility pop

/* Its configuration (small.c). */
extern const char *hz_je_malloc_conf;
/* jemalloc's standard entry points, which have its fast paths. */
void *hz_je_malloc(size_t size);
void *hz_je_calloc(size_t n, size_t size);
void *hz_je_realloc(void *ptr, size_t size);
void hz_je_free(void *ptr);
size_t hz_je_malloc_usable_size(void *ptr);
/* Its extended API. */
void *hz_je_mallocx(size_t size, int flags);
void *hz_je_rallocx(void *ptr, size_t size, int flags);
size_t hz_je_xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t hz_je_sallocx(const void *ptr, int flags);
void hz_je_dallocx(void *ptr, int flags);
void hz_je_sdallocx(void *ptr, size_t size, int flags);
size_t hz_je_nallocx(size_t size, int flags);
int hz_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int hz_je_mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int hz_je_mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
		       size_t newlen);
void hz_je_malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
			      const char *opts);

/* jemalloc's flags (jemalloc/jemalloc_macros.h). */
#define HZ_JE_ZERO 0x40                        /* MALLOCX_ZERO */
#define HZ_JE_LG_ALIGN(la) ((int)(la))         /* MALLOCX_LG_ALIGN */
#define HZ_JE_LG_ALIGN_MASK 0x3f               /* the alignment's bits */
#define HZ_JE_ALIGN_OF(flags) ((size_t)1 << ((flags) & HZ_JE_LG_ALIGN_MASK) & ~(size_t)1)
#define HZ_JE_TCACHE_MASK 0xfff00              /* MALLOCX_TCACHE(tc) bits */
#define HZ_JE_ARENA_MASK 0xfff00000u           /* MALLOCX_ARENA(a) bits */
#define HZ_JE_ARENAS_ALL "4096"                /* MALLCTL_ARENAS_ALL, in mallctl names */

/* jemalloc's first large size class (16 KiB with 4 KiB pages): from there
 * its calloc zeroes a recycled dirty block with MADV_DONTNEED, and every
 * page faults in again (unless its THP mode is "always"): 128 us for
 * 256 KiB against 2.2 us for glibc (bench/alloc_bench). Such blocks are
 * cleared here instead, below HZ_JE_CLEAR_MAX: above it (reached only
 * with the arenas off or HUGEZERO_LARGE_MIN raised) jemalloc's own calloc
 * knows fresh memory, which a clear would commit. */
#define HZ_JE_LARGE_MIN ((size_t)16 << 10)
#define HZ_JE_CLEAR_MAX ((size_t)1 << 20)
static inline int hz_small_clears(size_t size)
{
	return size >= HZ_JE_LARGE_MIN && size < HZ_JE_CLEAR_MAX;
}

/* jemalloc's block of size bytes (flags as mallocx's, 0 for none),
 * cleared whole, hinted at its first page; NULL when memory is out (errno
 * as jemalloc's malloc or mallocx leaves it). */
#pragma GCC visibility push(hidden)

HZ_NOINLINE void *hz_small_calloc(size_t size, int flags);

/* jemalloc's figures, refreshed. */
struct hz_small_totals {
	size_t in_use, mapped;
};
void hz_small_totals(struct hz_small_totals *t);
/* The same and the calls its arenas served, by name (an obs.h source). */
void hz_small_counters(hz_counter_fn fn, void *arg);
/* The thread cache's: blocks it took from jemalloc and gave back. */
void hz_small_cache_counters(hz_counter_fn fn, void *arg);
/* The thread caches' jemalloc arena, or -1 before it is made or where
 * it was refused. */
int hz_small_cache_arena(void);
/* Gives jemalloc's free pages (dirty and lazily freed) in every arena
 * back at once, counted (malloc.small.purged_bytes); with
 * HUGEZERO_SMALL=next, the next allocator's malloc_trim. */
void hz_small_trim(void);

#pragma GCC visibility pop

#endif
