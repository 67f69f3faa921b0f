/* preload/fork.h: fork, for the whole library, in one set of handlers at
 * its top: the allocator's locks (allocator/large.h), the counters'
 * (obs/fork.h) and the embedded jemalloc's, taken in that order after
 * every other library's prepare handler has run and released before any
 * other library's parent or child handler runs, as glibc's own malloc is
 * locked inside fork. A handler of another library may then allocate and
 * free, whatever the order in which the libraries started: glibc runs
 * prepare handlers last-registered first and the others first-registered
 * first, so these are registered before any other library's: the shared
 * library catches every registration (dynamic.c's __register_atfork) and
 * registers these first; libhugezero.a registers them in its constructor,
 * which runs before the program's own. */
#ifndef HZ_PRELOAD_FORK_H
#define HZ_PRELOAD_FORK_H

#include "../arch/common.h"

/* Registers the handlers, once: before any other registration, from any
 * thread (a second thread waits for the first). */
HZ_HIDDEN void hz_fork_register(void);

/* The embedded jemalloc's pthread_atfork (scripts/jemalloc-rename.sh
 * renames its call): its handlers are kept and run by this library's, in
 * their place in the order. */
HZ_HIDDEN int hz_je_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

#endif
