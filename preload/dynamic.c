/* The lookups of libhugezero.so (dynamic.h). */
#include <dlfcn.h>
#include <stddef.h>

#include "dynamic.h"

void *hz_glibc_lookup(void **cache, const char *name)
{
	static void *libc;
	void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (f)
		return f;
	/* In libc.so.6's own scope: another library (libjemalloc, for a
	 * program built for it) may define the name before glibc does. */
	if (!libc)
		libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	f = libc ? dlsym(libc, name) : NULL;
	__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	return f;
}

hz_backtrace_fn hz_unwind_open(void)
{
	void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	return lib ? (hz_backtrace_fn)dlsym(lib, "unw_backtrace") : NULL;
}
