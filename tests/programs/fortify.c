/* Built with -O2 -D_FORTIFY_SOURCE=2: the memset below becomes a call to
 * __memset_chk, since the destination's size is known and the length is
 * not. "ok" clears a 1 MiB array and prints the library's __memset_chk
 * counter (read with dlsym, so the program runs without the library too);
 * "overflow" writes one byte past it and must abort as glibc does;
 * "xoverflow" does the same through explicit_bzero (__explicit_bzero_chk). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char data[1 << 20];

static uint64_t chk_calls(void)
{
	int (*stat)(const char *, uint64_t *) =
		(int (*)(const char *, uint64_t *))dlsym(RTLD_DEFAULT, "hz_stat");
	uint64_t v = 0;
	if (!stat || stat("memset_chk.calls", &v))
		return UINT64_MAX;
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	/* The length comes from the command line: the compiler cannot prove
	 * it fits, so it calls __memset_chk with the object's size. */
	size_t n = sizeof data + (strstr(argv[1], "overflow") ? 1 : 0);
	if (!strcmp(argv[1], "xoverflow"))
		explicit_bzero(data, n); /* becomes __explicit_bzero_chk */
	uint64_t before = chk_calls();
	memset(data, argc, n); /* argc == 2: fill byte 2 */
	uint64_t after = chk_calls();
	for (size_t i = 0; i < sizeof data; i++)
		if (data[i] != 2)
			return 3;
	if (before == UINT64_MAX)
		printf("memset_chk reached the library: no (not loaded)\n");
	else
		printf("memset_chk reached the library: %s\n", after == before + 1 ? "yes" : "NO");
	return 0;
}
