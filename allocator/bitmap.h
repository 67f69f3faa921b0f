/* allocator/bitmap.h: bit ranges over arrays of 64-bit words, the
 * chunks' per-page state (chunk.h). */
#ifndef HZ_BITMAP_H
#define HZ_BITMAP_H

#include <stddef.h>
#include <stdint.h>

static inline int hz_bit(const uint64_t *b, size_t i)
{
	return (int)((b[i >> 6] >> (i & 63)) & 1);
}

/* The word of bit *i and the mask of the bits of [*i, j) in it; *i moves
 * to the next word's first bit. */
static inline uint64_t hz_bits_step(size_t *i, size_t j, size_t *w)
{
	size_t lo = *i & 63, hi = j - (*i & ~(size_t)63) < 64 ? j & 63 : 64;
	*w = *i >> 6;
	*i = (*w + 1) << 6;
	return (hi == 64 ? ~0ull : ((1ull << hi) - 1)) & ~((1ull << lo) - 1);
}

/* Sets (v = 1) or clears bits [i, j). */
static inline void hz_bits_set(uint64_t *b, size_t i, size_t j, int v)
{
	for (size_t w; i < j;) {
		uint64_t m = hz_bits_step(&i, j, &w);
		b[w] = v ? b[w] | m : b[w] & ~m;
	}
}

/* The number of bits set in [i, j). */
/* Sets in d the bits of [i, j) set in a or b. */
static inline void hz_bits_or(uint64_t *d, const uint64_t *a, const uint64_t *b, size_t i, size_t j)
{
	for (size_t w; i < j;) {
		uint64_t m = hz_bits_step(&i, j, &w);
		d[w] |= (a[w] | b[w]) & m;
	}
}

static inline size_t hz_bits_count(const uint64_t *b, size_t i, size_t j)
{
	size_t k = 0;
	for (size_t w; i < j;) {
		uint64_t m = hz_bits_step(&i, j, &w);
		k += (size_t)__builtin_popcountll(b[w] & m);
	}
	return k;
}

/* The first index in [i, limit) whose bit is want, or limit. */
static inline size_t hz_bits_find(const uint64_t *b, size_t i, size_t limit, int want)
{
	while (i < limit) {
		uint64_t w = want ? b[i >> 6] : ~b[i >> 6];
		w &= ~0ull << (i & 63);
		if (w) {
			size_t k = (i & ~(size_t)63) + (size_t)__builtin_ctzll(w);
			return k < limit ? k : limit;
		}
		i = (i | 63) + 1;
	}
	return limit;
}

#endif
