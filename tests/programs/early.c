/* A library whose constructor calls memset: with libhugezero.so preloaded
 * it runs before the library's own constructor, so memset must work on
 * the pre-initialisation policy. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static char buf[1 << 20];
const char *early_kernel = "not run";
int early_ok;

__attribute__((constructor)) static void early(void)
{
	const char *(*kernel_for)(int, size_t) =
		(const char *(*)(int, size_t))dlsym(RTLD_DEFAULT, "hz_kernel_for");
	early_kernel = kernel_for ? kernel_for(0xAB, sizeof buf) : "no library";
	memset(buf, 0xAB, sizeof buf);
	memset(buf + 10, 0, 100);
	early_ok = buf[0] == (char)0xAB && buf[sizeof buf - 1] == (char)0xAB && buf[10] == 0 &&
		   buf[109] == 0 && buf[110] == (char)0xAB;
}
