/* A program built against the installed library (tests/programs/install.sh):
 * with pkg-config or CMake's find_package, shared or static. It clears with
 * the API and allocates a large zeroed block, then prints whose malloc it
 * called and the library's count of large callocs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <hugezero.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	unsigned char buf[8192];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)i;
	hz_clear(buf, sizeof buf);
	for (size_t i = 0; i < sizeof buf; i++)
		if (buf[i])
			return 1;
	unsigned char *p = calloc(1, (size_t)8 << 20);
	if (!p || p[12345])
		return 1;
	free(p);
	uint64_t n = 0;
	if (hz_stat("calloc.large.calls", &n))
		return 1;
	Dl_info di;
	const char *from = dladdr((void *)malloc, &di) && di.dli_fname ? di.dli_fname : "static";
	printf("%s %llu\n", from, (unsigned long long)n);
	return n >= 1 ? 0 : 1;
}
