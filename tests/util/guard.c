#include <sys/mman.h>
#include <unistd.h>

#include "guard.h"

int guarded_alloc(struct guarded *g, size_t len)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	len = (len + ps - 1) & ~(ps - 1);
	unsigned char *m = mmap(NULL, len + 2 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	if (mprotect(m + ps, len, PROT_READ | PROT_WRITE)) {
		munmap(m, len + 2 * ps);
		return -1;
	}
	g->base = m + ps;
	g->len = len;
	g->map_len = len + 2 * ps;
	return 0;
}

void guarded_free(struct guarded *g)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	munmap(g->base - ps, g->map_len);
}
