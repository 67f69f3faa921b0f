/* A library preloaded after libhugezero.so, whose constructor runs before
 * the library's: it takes every pthread key but KEYS_LEFT (default 0), as
 * a program that has used them up would have, before the allocator starts
 * (small_cache.sh). */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

__attribute__((constructor(101))) static void take_keys(void)
{
	const char *left = getenv("KEYS_LEFT");
	int n = 0, keep = left ? atoi(left) : 0;
	pthread_key_t k[PTHREAD_KEYS_MAX];
	while (n < PTHREAD_KEYS_MAX && !pthread_key_create(&k[n], NULL))
		n++;
	while (keep-- > 0 && n > 0)
		pthread_key_delete(k[--n]);
}
