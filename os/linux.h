/* os/linux.h: what the Linux implementation's files share; not part of
 * the contract (os.h). */
#ifndef HZ_OS_LINUX_H
#define HZ_OS_LINUX_H

#include <errno.h>

#pragma GCC visibility push(hidden)

/* syscall() and libc's wrappers return -1 and set errno: the errno value,
 * or 0, with errno put back as it was. */
static inline int hz_os_status(long r, int saved)
{
	int e = r == -1 ? errno : 0;
	errno = saved;
	return e;
}

#pragma GCC visibility pop

#endif
