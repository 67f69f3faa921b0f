/* Preloaded ahead of libhugezero.so: any dlsym call (the library's own, or
 * its embedded jemalloc's) ends the process with a message. The library
 * must bootstrap and serve a whole run without one. */
#include <stdlib.h>
#include <unistd.h>

void *dlsym(void *handle, const char *name)
{
	static const char msg[] = "trap_dlsym: dlsym called\n";
	(void)handle;
	(void)name;
	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(98);
	_exit(99);
}
