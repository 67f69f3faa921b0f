/* The lookups of libhugezero.so (dynamic.h). */
#include <dlfcn.h>
#include <stddef.h>

#include "dynamic.h"

void *hz_lib_lookup(void **cache, const char *soname, const char *name)
{
	void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (f)
		return f;
	/* In the library's own scope: another library (libjemalloc, for a
	 * program built for it) may define the name before it does. */
	void *lib = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
	f = lib ? dlsym(lib, name) : NULL;
	__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	return f;
}

hz_backtrace_fn hz_unwind_open(void)
{
	void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	return lib ? (hz_backtrace_fn)dlsym(lib, "unw_backtrace") : NULL;
}
