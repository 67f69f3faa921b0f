/* Fresh memory: whether the arenas' new mappings ask for transparent huge
 * pages. Where free memory is backed, a huge page's first touch (one
 * fault, one clear of 2 MiB) costs a fraction of the 512 small faults it
 * replaces, and its TLB entry pays on every later access. On a VM whose
 * balloon reports free memory to the host, which discards it (free page
 * reporting; Firecracker-style microVMs, many clouds), a huge page is
 * taken from reported memory and its first touch waits for the host to
 * back all of it: 1-3.5 ms here, against 0.7-1 ms for 512 small faults,
 * which mostly reuse recently freed, still-backed pages. So it is
 * measured, in the process, at its first fresh mapping and again at the
 * first one 10 s after each measurement: two fresh huge pages and 2 MiB
 * of fresh small pages, touched and timed, then unmapped. Huge pages while
 * the huge page costs no more than the small ones; and while they are
 * chosen, the first huge page of every new mapping is touched and timed
 * too, and one dearer than the small pages measured turns them off until
 * the next measurement. Where the kernel reports free memory to its host
 * (hz_os_free_page_reporting), no such measurement can see how much
 * still-backed memory is left (the first huge pages, freed by a process
 * that has just exited, are cheap; the next ones are not): small pages.
 * HUGEZERO_FRESH forces either. */
#ifndef HZ_FRESH_H
#define HZ_FRESH_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"

enum hz_fresh_mode { HZ_FRESH_AUTO, HZ_FRESH_HUGE, HZ_FRESH_SMALL };
#define HZ_FRESH_REPROBE_NS ((uint64_t)10 * 1000000000u)

/* The mode, once, at setup (before the first mapping). */
HZ_HIDDEN void hz_fresh_setup(enum hz_fresh_mode mode);
/* A new mapping of the arenas, [p, p+size): advised for huge pages or
 * for small ones, as last decided; with huge pages, its first one touched
 * and timed (no lock held: it may take milliseconds). Only called where
 * THP is wanted at all (HUGEZERO_THP). */
HZ_HIDDEN void hz_fresh_advise(void *p, size_t size);
/* The decision for the next new mapping, 1 for huge pages, measuring
 * first when it is time to: before a large allocation, no lock held. */
HZ_HIDDEN int hz_fresh_decide(void);
/* Measures now (HUGEZERO_VERBOSE and hugezero info); 1 when huge pages
 * won. */
HZ_HIDDEN int hz_fresh_probe(void);

struct hz_fresh_stats {
	uint64_t probes;             /* measurements made */
	uint64_t samples;            /* huge pages of new mappings timed */
	uint64_t switches;           /* samples that turned huge pages off */
	uint64_t huge_ns, small_ns;  /* the last first touches timed */
	uint64_t huge_maps, small_maps; /* new mappings advised each way */
	int huge;                    /* the current decision */
	int reporting;               /* free page reporting seen */
};
HZ_HIDDEN void hz_fresh_stats(struct hz_fresh_stats *out);

#endif
