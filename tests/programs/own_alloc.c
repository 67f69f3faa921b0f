/* A program for `hugezero run` and `hugezero info --pid` to look at: it
 * allocates, fills and frees 4 MiB, prints the first byte, and with an
 * argument sleeps that many seconds first; with OWN_ALLOC_RUNS set, it
 * appends a line to that file, so a test counts its runs. Built plainly,
 * with jemalloc linked in (libjemalloc_pic.a), fully static and with
 * AddressSanitizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *runs = getenv("OWN_ALLOC_RUNS");
	FILE *f = runs ? fopen(runs, "a") : NULL;
	if (f) {
		fputs("ran\n", f);
		fclose(f);
	}
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
