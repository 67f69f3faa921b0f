/* Call sites of large clears (HUGEZERO_CALLSITES=N): one large memset or
 * arena calloc in N, per thread, has its stack taken with libunwind's
 * unw_backtrace and counted in a fixed-size table keyed by the stack; the
 * report lists the top sites by bytes, symbolised. libunwind is opened
 * privately (RTLD_LOCAL: its _Unwind_Backtrace and backtrace never
 * become the program's) and only when asked for; libhugezero.so only. A
 * sample is dropped, never waited for, when the table is busy or the
 * thread is already sampling, so sampling cannot deadlock, and anything
 * libunwind allocates meanwhile is not sampled again. */
#ifndef HZ_CALLSITES_H
#define HZ_CALLSITES_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/arch.h"

/* 1 once HUGEZERO_CALLSITES took effect (set at initialisation). */
HZ_HIDDEN extern int hz_callsites_on;

/* Counts down this thread's calls; takes a sample every N-th. */
__attribute__((visibility("hidden"), weak)) void hz_callsite(size_t bytes);
/* Reads HUGEZERO_CALLSITES and opens libunwind. */
__attribute__((visibility("hidden"), weak)) void hz_callsites_init(void);

#define HZ_SITE_FRAMES 16
/* One site as the report sees it: frames already symbolised. */
struct hz_site_frame {
	const char *function;  /* NULL when the module has no symbol there */
	uintptr_t offset;      /* from the function, or from the module */
	const char *module;
	uintptr_t module_offset; /* for addr2line */
	char build_id[41];
};
typedef void (*hz_site_fn)(void *arg, unsigned rank, uint64_t calls, uint64_t bytes,
			   const struct hz_site_frame *frames, int nframes);
/* The top `max` sites by bytes, the library's own frames left out; the
 * estimated totals are the sampled ones times N. */
__attribute__((visibility("hidden"), weak)) void hz_callsites_each(hz_site_fn fn, void *arg,
								  unsigned max, unsigned *period);

#endif
