/* invisible-env: HUGEZERO_THREADS=2 */
/* A seccomp filter installed by a raw system call, as libseccomp's
 * seccomp_load does (no C library function is called for it): a thread
 * made after it inherits it, and the filter was written for the
 * program's own calls. The library sees the filter before it makes a
 * thread and makes none: after the filter, large blocks allocated,
 * calloc'ed, set and freed start no helper and no zeroer (in the
 * library's run: helpers.starts and background.starts stay 0), and every
 * byte is right. The filter allows every call, so that under glibc, and
 * under the library, the program itself runs on. */
#include "invisible.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

int main(void)
{
	struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {1, f};
	if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		skip("seccomp: %s", strerror(errno));
	const size_t n = 128 * MIB;
	for (int r = 0; r < 4; r++) {
		unsigned char *p = malloc(n);
		if (!p)
			fail("malloc(128 MiB)");
		memset(p, 0x33 + r, n);
		if (first_not(p, 0x33 + r, n) != n)
			fail("memset left bytes unwritten");
		free(p);
		unsigned char *z = calloc(1, n);
		if (!z || first_not(z, 0, n) != n)
			fail("calloc(128 MiB) not zero");
		free(z);
	}
	sleep_ns(200000000u); /* a zeroer started by the frees would run now */
	if (under_hz()) {
		uint64_t h = counter("helpers.starts"), z = counter("background.starts");
		if (h || z)
			fail("after a raw seccomp filter: %llu helper(s) and %llu zeroer(s) started",
			     (unsigned long long)h, (unsigned long long)z);
		note("after a raw seccomp filter: no thread of the library started");
	}
	return 0;
}
