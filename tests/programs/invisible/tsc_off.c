/* invisible-env: HUGEZERO_BACKGROUND=0 */
/* memset after the program turned its time-stamp counter off
 * (prctl(PR_SET_TSC, PR_TSC_SIGSEGV): reading it then kills the thread
 * with SIGSEGV). Large fills had timed themselves with it to learn their
 * kernel (arch/learn.c); after the prctl none may. Fills of every size
 * the learning covers, before and after, each checked; exits 0. */
#include "invisible.h"
#include <sys/prctl.h>

int main(void)
{
	size_t most = 96 * MIB;
	unsigned char *p = malloc(most);
	if (!p)
		fail("malloc(%zu MiB)", most >> 20);
	for (size_t n = 4 * MIB; n <= most; n += n / 2)
		for (int i = 0; i < 12; i++)
			memset(p, i, n); /* learning under way: every arm tried */
	if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0))
		skip("prctl(PR_SET_TSC): %s", strerror(errno));
	for (size_t n = 4 * MIB; n <= most; n += n / 2)
		for (int i = 0; i < 300; i++) {
			memset(p, i & 0xff, n);
			if (first_not(p, (unsigned char)i, n) != n)
				fail("memset of %zu bytes: a byte not written", n);
		}
	free(p);
	puts("ok");
	return 0;
}
