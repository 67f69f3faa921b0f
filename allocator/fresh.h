/* allocator/fresh.h: fresh memory for the arenas, in one place: where a
 * new mapping goes (the window, registry.h), whether it asks for
 * transparent huge pages or small ones (decided by measuring first
 * touches, HUGEZERO_FRESH forcing either), and the counters of both.
 * Why huge pages are measured rather than assumed: docs/design.md, "Fresh memory". */
#ifndef HZ_FRESH_H
#define HZ_FRESH_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

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
 * when not watched. No lock held. */
int hz_fresh_watch(void *block, void *p, size_t size, int advice);
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

/* fork (fork_locks.h): the watch's lock; in the child, a probe that was
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

#pragma GCC visibility pop

#endif
