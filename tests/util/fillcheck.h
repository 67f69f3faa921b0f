/* Checks of a fill function against a reference, shared by the Criterion
 * tests and the plain runner used under qemu-aarch64. Each returns 0 on
 * success or writes what went wrong into err and returns -1. */
#ifndef HZ_TEST_FILLCHECK_H
#define HZ_TEST_FILLCHECK_H
#include <stddef.h>

typedef void *(*fill_fn)(void *p, int c, size_t n);

/* Every size 0..4096 at every offset 0..63, placed at the start and at the
 * end of a guarded buffer, for fill bytes 0, 0xFF and 0x5A, with 64
 * sentinel bytes on both sides of the target. */
int check_exhaustive(fill_fn f, char *err, size_t errlen);
/* The same for every size in [lo, hi]. */
int check_sizes(fill_fn f, size_t lo, size_t hi, char *err, size_t errlen);
/* iters random sizes up to max_size at random offsets with random fill
 * bytes, in a guarded buffer; seed makes a run repeatable. */
int check_random(fill_fn f, unsigned iters, size_t max_size, unsigned seed,
		 char *err, size_t errlen);
/* The range [p, p+n) holds only byte c. */
int all_bytes(const unsigned char *p, size_t n, unsigned char c, size_t *bad_at);
#endif
