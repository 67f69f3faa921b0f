/* Every other library's fork handlers, caught (libhugezero.so only):
 * every library's pthread_atfork (libc_nonshared's, linked into each)
 * registers through glibc's __register_atfork. This library's handlers go
 * first (fork_handlers.c), and the call goes on to glibc's, with the caller's DSO,
 * which dlclose unregisters. libhugezero.a registers its handlers in its
 * constructor instead. */
#include <errno.h>

#include "preload.h"

HZ_EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso)
{
	typedef int (*register_fn)(void (*)(void), void (*)(void), void (*)(void), void *);
	static register_fn glibc;
	hz_fork_register();
	if (!__atomic_load_n(&glibc, __ATOMIC_ACQUIRE))
		__atomic_store_n(&glibc, (register_fn)hz_glibc_symbol("__register_atfork"), __ATOMIC_RELEASE);
	return glibc ? glibc(prepare, parent, child, dso) : ENOMEM;
}
