/* The lookups of libhugezero.a (dynamic.c): none. */
#include <stddef.h>

#include "preload.h"

void *hz_glibc_symbol(const char *name)
{
	(void)name;
	return NULL;
}

void *hz_next_symbol(const char *name)
{
	(void)name;
	return NULL;
}

void *hz_lib_lookup(void **cache, const char *soname, const char *name)
{
	(void)cache;
	(void)soname;
	(void)name;
	return NULL;
}

hz_backtrace_fn hz_unwind_open(void)
{
	return NULL;
}
