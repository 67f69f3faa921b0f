/* The small-size memset front end, as a template: an arch file defines
 * HZ_VW (vector width in bytes, 16, 32 or 64) and HZ_FRONT (the function's
 * name), optionally HZ_MASKED_FILL(p, byte, n) for sizes below one vector
 * where the ISA has byte-masked stores (used while the vector stays in
 * its 4 KiB page), HZ_FRONT_GUARD (a condition without which every call
 * goes to HZ_FRONT_ELSE, before an instruction of the ISA runs; default
 * HZ_FRONT_LARGE), HZ_FRONT_LARGE (default hz_fill_uncounted) and
 * HZ_FRONT_VISIBILITY, sets the target ISA, and includes this file. Sizes up
 * to HZ_FRONT_MAX are filled with overlapping unaligned stores from both
 * ends, so each size class is a fixed number of stores behind one size
 * test; above 8 vectors an aligned loop fills the middle. Larger sizes
 * leave through one unlikely test to HZ_FRONT_LARGE. */

#include <stdint.h>

#define HZ_CAT_(a, b) a##b
#define HZ_CAT(a, b) HZ_CAT_(a, b)
#define HZ_V HZ_CAT(HZ_FRONT, _v)
#define HZ_VU HZ_CAT(HZ_FRONT, _vu)
#define HZ_VH HZ_CAT(HZ_FRONT, _vh)

typedef uint8_t HZ_V __attribute__((vector_size(HZ_VW)));
typedef uint8_t HZ_VU __attribute__((vector_size(HZ_VW), aligned(1), may_alias));
typedef uint8_t HZ_VH __attribute__((vector_size(HZ_VW / 2), aligned(1), may_alias));

#ifndef HZ_SMALL_SCALARS
#define HZ_SMALL_SCALARS
typedef uint64_t hz_u64u __attribute__((aligned(1), may_alias));
typedef uint32_t hz_u32u __attribute__((aligned(1), may_alias));
typedef uint16_t hz_u16u __attribute__((aligned(1), may_alias));
typedef uint8_t hz_v16u __attribute__((vector_size(16), aligned(1), may_alias));

/* n < 8 bytes of w's byte at p: two overlapping stores, or one. */
static inline void hz_fill_below8(uint8_t *p, uint64_t w, size_t n)
{
	if (n >= 4) {
		*(hz_u32u *)p = (uint32_t)w;
		*(hz_u32u *)(p + n - 4) = (uint32_t)w;
	} else if (n >= 2) {
		*(hz_u16u *)p = (uint16_t)w;
		*(hz_u16u *)(p + n - 2) = (uint16_t)w;
	} else if (n) {
		*p = (uint8_t)w;
	}
}
#endif

#ifndef HZ_FRONT_VISIBILITY
#define HZ_FRONT_VISIBILITY /* hidden, as every file of the rooms is built */
#endif
#ifndef HZ_FRONT_LARGE
#define HZ_FRONT_LARGE hz_fill_uncounted
#endif
#ifndef HZ_FRONT_ELSE
#define HZ_FRONT_ELSE HZ_FRONT_LARGE
#endif

HZ_FRONT_VISIBILITY void *HZ_FRONT(void *d, int c, size_t n)
{
	uint8_t *p = d;
	uint8_t b = (uint8_t)c;

#ifdef HZ_FRONT_GUARD
	/* Before any instruction of the target ISA. A branch of its own, so
	 * the size tests below do not wait for this load. */
	if (hz_unlikely(!(HZ_FRONT_GUARD)))
		return HZ_FRONT_ELSE(d, c, n);
#endif

	if (hz_likely(n < HZ_VW)) {
#ifdef HZ_MASKED_FILL
		/* Below one vector: one masked store, no branch on the size,
		 * while the whole vector lies in p's 4 KiB page. A vector
		 * reaching into the next page, which may be unmapped (a buffer
		 * at the end of its mapping, before a guard page), has its
		 * masked-out bytes' fault suppressed by microcode: 190 ns here
		 * against 2. There, the stores below, which touch only
		 * [p, p+n). */
		if (hz_likely(((uintptr_t)p & 4095) <= 4096 - HZ_VW)) {
			HZ_MASKED_FILL(p, b, n);
			return d;
		}
#endif
		if (n >= HZ_VW / 2) {
			HZ_VH h = (HZ_VH){0} + b;
			*(HZ_VH *)p = h;
			*(HZ_VH *)(p + n - HZ_VW / 2) = h;
			return d;
		}
		uint64_t w = b * 0x0101010101010101ull;
#if HZ_VW > 32
		if (n >= 16) {
			hz_v16u q = (hz_v16u){0} + b;
			*(hz_v16u *)p = q;
			*(hz_v16u *)(p + n - 16) = q;
		} else
#endif
#if HZ_VW > 16
		if (n >= 8) {
			*(hz_u64u *)p = w;
			*(hz_u64u *)(p + n - 8) = w;
		} else
#endif
		hz_fill_below8(p, w, n);
		return d;
	}
	/* Stores from both ends: 2, 4 or 8 of them cover every size up to
	 * 8 vectors, one size test each, as few as glibc's; beyond, aligned
	 * blocks of 4 fill the middle. Each pair is stored before the test
	 * for the next, as every size past it needs them: the stores go out
	 * while a mispredicted size test resolves (random sizes of 1-256 B
	 * on AVX2, churn_bench memset0: 0.95x the time of testing first). A
	 * size past HZ_FRONT_MAX has 4 vectors stored before it leaves:
	 * bytes it would write anyway. */
	uint8_t *end = p + n;
	HZ_V v = (HZ_V){0} + b;
	*(HZ_VU *)p = v;
	*(HZ_VU *)(end - HZ_VW) = v;
	if (hz_likely(n <= 2 * HZ_VW))
		return d;
	*(HZ_VU *)(p + HZ_VW) = v;
	*(HZ_VU *)(end - 2 * HZ_VW) = v;
	if (hz_likely(n <= 4 * HZ_VW))
		return d;
	if (hz_unlikely(n > HZ_FRONT_MAX))
		return HZ_FRONT_LARGE(d, c, n);
	*(HZ_VU *)(p + 2 * HZ_VW) = v;
	*(HZ_VU *)(p + 3 * HZ_VW) = v;
	*(HZ_VU *)(end - 4 * HZ_VW) = v;
	*(HZ_VU *)(end - 3 * HZ_VW) = v;
	if (n <= 8 * HZ_VW)
		return d;
	uint8_t *a = (uint8_t *)((uintptr_t)(p + 4 * HZ_VW) & ~(uintptr_t)(HZ_VW - 1));
	for (; a < end - 4 * HZ_VW; a += 4 * HZ_VW) {
		*(HZ_V *)a = v;
		*(HZ_V *)(a + HZ_VW) = v;
		*(HZ_V *)(a + 2 * HZ_VW) = v;
		*(HZ_V *)(a + 3 * HZ_VW) = v;
	}
	return d;
}

#undef HZ_V
#undef HZ_VU
#undef HZ_VH
#undef HZ_VW
#undef HZ_FRONT
#undef HZ_MASKED_FILL
#undef HZ_FRONT_GUARD
#undef HZ_FRONT_LARGE
#undef HZ_FRONT_ELSE
#undef HZ_FRONT_VISIBILITY
