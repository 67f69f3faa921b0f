/* What only a dynamically linked library looks up: glibc's own functions
 * (the rest of the baseline of HUGEZERO_MODE=off, and the A/B arms'
 * memset) and libunwind (call sites). libhugezero.so links dynamic.c;
 * libhugezero.a links static.c, which finds neither: a static program
 * has no glibc to forward to, and linking dlopen into it only warns. Not
 * during bootstrap: dlopen and dlsym may allocate. */
#ifndef HZ_DYNAMIC_H
#define HZ_DYNAMIC_H

#include "../obs/callsites.h"

/* glibc's definition of name, cached in *cache; NULL when there is none. */
HZ_HIDDEN void *hz_glibc_lookup(void **cache, const char *name);
/* libunwind's unw_backtrace, from libunwind opened privately (RTLD_LOCAL:
 * its _Unwind_Backtrace and backtrace never become the program's); NULL
 * when it is not installed. */
HZ_HIDDEN hz_backtrace_fn hz_unwind_open(void);

#endif
