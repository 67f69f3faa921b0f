/* Call sites of large blocks and large memsets: one in N, per thread, has its stack taken (a backtrace function handed to setup:
 * libunwind's, which the library opens privately in libhugezero.so) and
 * counted in a fixed-size table keyed by the stack; the report lists the
 * top sites by bytes, symbolised. A sample is dropped, never waited for,
 * when the table is busy or the thread is already sampling, so sampling
 * cannot deadlock, and anything the backtrace function allocates
 * meanwhile is not sampled again. */
#ifndef HZ_CALLSITES_H
#define HZ_CALLSITES_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

/* 1 once hz_callsites_setup took effect. */
extern int hz_callsites_on;

typedef int (*hz_backtrace_fn)(void **ips, int max);
/* Samples 1 in period calls (period >= 1) with backtrace. At
 * initialisation, before threads are made. */
void hz_callsites_setup(unsigned period, hz_backtrace_fn backtrace);
/* fork (hz_obs_fork_child): the child's table starts empty. */
void hz_callsites_fork_child(void);
/* Counts down this thread's calls; takes a sample every period-th. */
HZ_NOINLINE void hz_callsite(size_t bytes);

#define HZ_SITE_FRAMES 16
/* One site as the report sees it: frames already symbolised. */
struct hz_site_frame {
	const char *function;  /* NULL when the module has no symbol there */
	uintptr_t offset;      /* from the function, or from the module */
	const char *module;
	uintptr_t module_offset; /* for addr2line */
	char build_id[41];
};
/* The top sites by bytes, one at a time, the library's own frames left
 * out: hz_callsites_begin copies the table (max sites at most), then each
 * hz_callsites_next gives the next one (0 after the last). The totals are
 * estimates: the sampled ones times the period. One walk at a time (the
 * report's lock). */
struct hz_site_cursor {
	unsigned rank, max, period;
	uint64_t calls, bytes;
	int nframes;
	struct hz_site_frame frames[HZ_SITE_FRAMES];
};
void hz_callsites_begin(struct hz_site_cursor *c, unsigned max);
int hz_callsites_next(struct hz_site_cursor *c);

#pragma GCC visibility pop

#endif
