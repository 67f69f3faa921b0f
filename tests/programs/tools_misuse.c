/* What valgrind must find beside the library (tools.sh): a block read
 * after its free, and one leaked. Prints nothing; exits 0. */
#include <stdlib.h>

int main(void)
{
	volatile char *p = malloc(64);
	if (!p)
		return 1;
	p[0] = 1;
	free((void *)p);
	int r = p[0]; /* read after free */
	char *volatile q = malloc(100);
	if (q)
		q[0] = (char)r;
	q = NULL; /* leaked */
	return 0;
}
