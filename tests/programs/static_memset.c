/* A program linked with libhugezero.a that calls only memset: the static
 * link still takes the library's constructor (preload/init.c), which the
 * test sees in HUGEZERO_VERBOSE's report on stderr. */
#include <stdlib.h>
#include <string.h>

static unsigned char buf[1 << 20];

int main(void)
{
	memset(buf, 0x5A, sizeof buf);
	return buf[sizeof buf - 1] == 0x5A ? 0 : 1;
}
