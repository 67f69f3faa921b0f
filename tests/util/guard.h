/* Test buffers with PROT_NONE guard pages on both sides: a kernel that
 * writes one byte outside its extent faults instead of passing. */
#ifndef HZ_TEST_GUARD_H
#define HZ_TEST_GUARD_H
#include <stddef.h>

struct guarded {
	unsigned char *base; /* first usable byte, page-aligned */
	size_t len;          /* usable bytes; base + len is a guard page */
	size_t map_len;
};

/* Returns 0, or -1 if the mapping failed. len is rounded up to pages. */
int guarded_alloc(struct guarded *g, size_t len);
void guarded_free(struct guarded *g);
#endif
