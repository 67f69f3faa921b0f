/* Large memsets from two functions of known names (one clearing 8x the
 * bytes of the other), for tests/stats.sh: with HUGEZERO_CALLSITES the
 * report must name them, the bigger first. Built with -rdynamic (dladdr
 * finds names in dynamic symbol tables) and without sibling calls (each
 * function keeps its frame). */
#include <stdlib.h>
#include <string.h>

static void *(*volatile opaque_memset)(void *, int, size_t) = memset;

__attribute__((noinline)) void clear_big_buffer_here(char *p)
{
	opaque_memset(p, 0, 1 << 20);
}

__attribute__((noinline)) void clear_small_buffer_here(char *p)
{
	opaque_memset(p, 1, 1 << 17);
}

int main(void)
{
	char *p = malloc(1 << 20);
	if (!p)
		return 1;
	for (int i = 0; i < 200; i++) {
		clear_big_buffer_here(p);
		clear_small_buffer_here(p);
	}
	free(p);
	return 0;
}
