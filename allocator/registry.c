/* The arenas' address table and window (registry.c). Writers serialise on
 * one lock; readers load without it. */
#include <errno.h>
#include <pthread.h>

#include "../os/os.h"
#include "allocator.h"

uintptr_t *hz_reg_root[HZ_REG_ROOT];
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

uintptr_t hz_reg_span = HZ_REG_WINDOW;

void hz_reg_widen(void)
{
	__atomic_store_n(&hz_reg_span, UINTPTR_MAX, __ATOMIC_RELAXED);
}

int hz_reg_set(const void *base, size_t len, uintptr_t e)
{
	uintptr_t first = (uintptr_t)base >> HZ_CHUNK_SHIFT;
	uintptr_t last = ((uintptr_t)base + len - 1) >> HZ_CHUNK_SHIFT;
	if (last >> HZ_REG_BITS)
		return ENOMEM;
	pthread_mutex_lock(&reg_lock);
	for (uintptr_t i = first; i <= last; i++) {
		uintptr_t *leaf = hz_reg_root[i >> HZ_REG_LEAF_BITS];
		if (!leaf) {
			void *m;
			if (hz_os_map(HZ_REG_LEAF * sizeof *leaf, hz_page_size, &m)) {
				pthread_mutex_unlock(&reg_lock);
				return ENOMEM;
			}
			leaf = m;
			__atomic_store_n(&hz_reg_root[i >> HZ_REG_LEAF_BITS], leaf, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&leaf[i & (HZ_REG_LEAF - 1)], e, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

void hz_reg_lock(void)
{
	pthread_mutex_lock(&reg_lock);
}

void hz_reg_unlock(void)
{
	pthread_mutex_unlock(&reg_lock);
}
