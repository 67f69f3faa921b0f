/* The lookups of libhugezero.a (dynamic.c): none. */
#include <stddef.h>

#include "preload.h"

const int hz_sees_jumps = 0;

void *hz_glibc_symbol(const char *name)
{
	(void)name;
	return NULL;
}

int hz_next_family(const char *const *names, void **out, int n)
{
	(void)names;
	for (int i = 0; i < n; i++)
		out[i] = NULL;
	return -1;
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
