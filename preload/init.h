/* preload/init.h: the library's constructor (init.c), below only the
 * exported ABI. It configures every room from the options; nothing calls
 * it. */
#ifndef HZ_INIT_H
#define HZ_INIT_H

#pragma GCC visibility push(hidden)

/* Referenced by every file of the exported ABI (HZ_INIT_LINK), so that a
 * program linked with libhugezero.a, which takes only the objects it
 * needs, takes the constructor with any function of the library it
 * calls. */
extern const int hz_init_linked;
#define HZ_INIT_LINK __attribute__((used)) static const int *const hz_init_link = &hz_init_linked

#pragma GCC visibility pop

#endif
