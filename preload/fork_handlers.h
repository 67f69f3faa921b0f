/* preload/fork_handlers.h: fork, for the whole library, in one set of handlers at
 * its top: the allocator's locks (allocator/fork_locks.h), the counters'
 * (obs/fork_reset.h) and the embedded jemalloc's (allocator/small.h), taken in
 * that order after every other library's prepare handler has run and
 * released before any other library's parent or child handler runs, as
 * glibc's own malloc is locked inside fork. A handler of another library
 * may then allocate and free, whatever the order in which the libraries
 * started: glibc runs prepare handlers last-registered first and the
 * others first-registered first, so these are registered before any other
 * library's: the shared library catches every registration (atfork.c)
 * and registers these first; libhugezero.a registers them in its
 * constructor, which runs before the program's own. */
#ifndef HZ_PRELOAD_FORK_H
#define HZ_PRELOAD_FORK_H

#include "../arch/common.h"

#pragma GCC visibility push(hidden)

/* Registers the handlers, once: before any other registration, from any
 * thread (a second thread waits for the first). */
void hz_fork_register(void);

#pragma GCC visibility pop

#endif
