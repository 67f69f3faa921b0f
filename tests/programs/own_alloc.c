/* A program for `hugezero run` and `hugezero info --pid` to look at: it
 * allocates, fills and frees 4 MiB, prints the first byte, and with an
 * argument sleeps that many seconds first. Built plainly, with jemalloc
 * linked in (libjemalloc_pic.a), fully static and with AddressSanitizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 1)
		sleep((unsigned)atoi(argv[1]));
	char *p = malloc(4 << 20);
	if (!p)
		return 1;
	memset(p, 7, 4 << 20);
	printf("%d\n", p[(4 << 20) - 1]);
	free(p);
	return 0;
}
