/* The lookups of libhugezero.a (dynamic.h): none. */
#include <stddef.h>

#include "dynamic.h"

void *hz_glibc_lookup(void **cache, const char *name)
{
	(void)cache;
	(void)name;
	return NULL;
}

hz_backtrace_fn hz_unwind_open(void)
{
	return NULL;
}
