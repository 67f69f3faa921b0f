/* Checks for the test programs that run without Criterion (preloaded into
 * a plain process, with or without the library): CHECK counts and prints
 * failures; the program ends with report(). */
#ifndef HZ_TEST_CHECK_H
#define HZ_TEST_CHECK_H

#include <stddef.h>
#include <stdio.h>

static unsigned pass, fail;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (cond)                                                      \
			pass++;                                                \
		else {                                                         \
			fail++;                                                \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);            \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
		}                                                              \
	} while (0)

/* Whether the n bytes at p all equal c. */
static inline int all(const unsigned char *p, size_t n, unsigned char c)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

/* "N passed, N failed"; the exit status. */
static inline int report(void)
{
	printf("%u passed, %u failed\n", pass, fail);
	return fail != 0;
}

#endif
