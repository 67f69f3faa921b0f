/* What only a dynamically linked library looks up: glibc's own functions
 * (the rest of the baseline of HUGEZERO_MODE=off, and the A/B arms'
 * memset) and libunwind (call sites). libhugezero.so links dynamic.c;
 * libhugezero.a links static.c, which finds neither: a static program
 * has no glibc to forward to, and linking dlopen into it only warns. Not
 * during bootstrap: dlopen and dlsym may allocate. */
#ifndef HZ_DYNAMIC_H
#define HZ_DYNAMIC_H

#include "../obs/callsites.h"

#pragma GCC visibility push(hidden)

/* glibc's own definition of name, read from libc.so.6's symbol table (its
 * GNU hash table, through dl_iterate_phdr), without dlsym, which may
 * allocate; NULL when there is none. */
void *hz_glibc_symbol(const char *name);
/* The next definition of name after this library's in the link order
 * (the program, the libraries preloaded after it, those it links), read
 * from their symbol tables like hz_glibc_symbol: no dlsym, no allocation,
 * so it serves before the allocator has started. NULL when none. */
void *hz_next_symbol(const char *name);
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

#pragma GCC visibility pop

#endif
