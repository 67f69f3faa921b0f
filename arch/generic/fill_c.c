/* The portable C kernel. Built with -fno-builtin
 * -fno-tree-loop-distribute-patterns so the compiler cannot turn these
 * loops back into a call to memset (which may be this library). */
#include "../arch.h"

typedef uint64_t hz_word __attribute__((may_alias));

void *hz_fill_c(void *d, int c, size_t n)
{
	unsigned char *p = d;
	unsigned char b = (unsigned char)c;

	/* Bytes up to the first 8-byte boundary, then words, then the tail. */
	while (n && ((uintptr_t)p & 7)) {
		*p++ = b;
		n--;
	}
	uint64_t w = b * 0x0101010101010101ull;
	for (; n >= 32; n -= 32, p += 32) {
		((hz_word *)p)[0] = w;
		((hz_word *)p)[1] = w;
		((hz_word *)p)[2] = w;
		((hz_word *)p)[3] = w;
	}
	for (; n >= 8; n -= 8, p += 8)
		*(hz_word *)p = w;
	while (n--)
		*p++ = b;
	return d;
}
