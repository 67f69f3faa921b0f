/* The arenas' address table (registry.h). Writers serialise on one lock;
 * readers load without it. */
#include <errno.h>
#include <pthread.h>

#include "prim.h"
#include "registry.h"

uintptr_t *hz_reg_root[HZ_REG_ROOT];
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

uintptr_t hz_reg_span = HZ_REG_WINDOW;

void hz_reg_widen(void)
{
	__atomic_store_n(&hz_reg_span, UINTPTR_MAX, __ATOMIC_RELAXED);
}

static int in_window(const void *p, size_t size)
{
	uintptr_t off = (uintptr_t)p - HZ_REG_WINDOW_LO;
	return off < HZ_REG_WINDOW && size <= HZ_REG_WINDOW - off;
}

/* The next place to try, as an offset into the window: a bump pointer
 * that wraps, starting at a random 64 MiB slot of the window's first
 * quarter (the layout differs from process to process, as the kernel's
 * own placement does). After a wrap, the places freed since are found
 * again. */
static uintptr_t cursor;
/* Set once a mapping in the window worked: from then on ENOMEM there is
 * memory or address space running out (an rlimit), which a mapping
 * anywhere else, over-mapped for its alignment, could only make worse. */
static int window_works;

int hz_reg_map(size_t size, int hugetlb, void **out)
{
	size_t step = hz_round_up(size, HZ_CHUNK_SIZE);
	if (step && step <= HZ_REG_WINDOW / 4) {
		uintptr_t expect = 0, start = (hz_os_random64() % (HZ_REG_WINDOW / 4 >> HZ_CHUNK_SHIFT))
						<< HZ_CHUNK_SHIFT;
		__atomic_compare_exchange_n(&cursor, &expect, start, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		for (int tries = 0; tries < 16; tries++) {
			uintptr_t off = __atomic_fetch_add(&cursor, step, __ATOMIC_RELAXED) & (HZ_REG_WINDOW - 1);
			if (off + step > HZ_REG_WINDOW)
				continue; /* across the end: the next one wraps */
			void *at = (void *)(HZ_REG_WINDOW_LO + off);
			int e = hz_os_map_at(at, size, hugetlb);
			if (!e) {
				__atomic_store_n(&window_works, 1, __ATOMIC_RELAXED);
				*out = at;
				return 0;
			}
			if (e != EEXIST && __atomic_load_n(&window_works, __ATOMIC_RELAXED))
				return ENOMEM;
			if (e != EEXIST)
				break;
		}
	}
	int e = hugetlb ? hz_os_map_hugetlb(size, HZ_CHUNK_SIZE, out)
			: hz_os_map(size, HZ_CHUNK_SIZE, out);
	if (e)
		return ENOMEM;
	if (!in_window(*out, size))
		hz_reg_widen();
	return 0;
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
