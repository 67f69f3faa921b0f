/* Hardened mode's small engine (small_hardened.c): the small engine's
 * table wrapped, so the fast paths gain no instruction. Every block
 * takes TAG bytes more from the engine beneath:
 *
 *   [ the program's n bytes | canary (8) | ... | tag (8) ]
 *                                               ^ the engine's usable end
 *
 * The tag, at the block's end, is n mixed with the block's address and a
 * secret: a pointer into a block, or to no block, reads a tag that does
 * not decode to a size that fits. The canary, right after the program's
 * bytes, is the address mixed with another secret: a write past the end
 * changes it. A free checks both, clears the block (tag included, so a
 * second free finds none) and holds it in the quarantine (hardened.c);
 * a block let go from there is checked still zero (a write after free)
 * before the engine beneath takes it back. Messages and abort as glibc's
 * malloc checks. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../os/os.h"
#include "allocator.h"

#define TAG 16
#define WRITE_CHECK 1024 /* bytes of a block let go checked for a write after free */

static struct hz_small_engine inner;
static uint64_t secret_tag, secret_canary;
/* The main thread's stack (hz_os_main_stack): a pointer there (a local
 * array freed) is no engine's block, and jemalloc's lookup of an address
 * it never mapped faults; it is caught before, as glibc catches it. Other
 * threads' stacks are not known without a lock (pthread_getattr_np's,
 * which a free inside it would take again). */
static uintptr_t stack_lo, stack_hi;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9E3779B97F4A7C15ull;
	return x ^ (x >> 29);
}

static void bad(const char *what)
{
	hz_os_log(what, NULL, NULL);
	abort();
}

static void stamp(unsigned char *p, size_t n, size_t usable)
{
	uint64_t c = mix((uintptr_t)p ^ secret_canary), t = n ^ mix((uintptr_t)p ^ secret_tag);
	memcpy(p + n, &c, sizeof c);
	memcpy(p + usable - sizeof t, &t, sizeof t);
}

/* The program's size of the block at p, its usable bytes beneath in
 * *usable; aborts with what (free(), realloc(), ...) where p is not a
 * live block or its canary changed. */
static size_t check(const unsigned char *p, size_t *usable, const char *invalid, const char *overflow)
{
	/* Every engine's blocks are 8-aligned at least. */
	if (((uintptr_t)p & 7) || (uintptr_t)p - stack_lo < stack_hi - stack_lo)
		bad(invalid);
	size_t u = inner.usable((void *)p);
	uint64_t t, c;
	if (u < TAG)
		bad(invalid);
	memcpy(&t, p + u - sizeof t, sizeof t);
	size_t n = t ^ mix((uintptr_t)p ^ secret_tag);
	if (n > u - TAG)
		bad(hz_quarantine_holds(p) ? "free(): double free detected in tcache 2" : invalid);
	memcpy(&c, p + n, sizeof c);
	if (c != mix((uintptr_t)p ^ secret_canary))
		bad(overflow);
	*usable = u;
	return n;
}

static void *stamped(unsigned char *p, size_t n)
{
	if (p)
		stamp(p, n, inner.usable(p));
	return p;
}

static int too_big(size_t n)
{
	if (n <= SIZE_MAX - TAG)
		return 0;
	errno = ENOMEM;
	return 1;
}

static void *h_malloc(size_t n)
{
	return too_big(n) ? NULL : stamped(inner.malloc(n + TAG), n);
}

static void *h_calloc(size_t k, size_t n)
{
	size_t total;
	if (__builtin_mul_overflow(k, n, &total) || too_big(total)) {
		errno = ENOMEM;
		return NULL;
	}
	return stamped(inner.calloc(1, total + TAG), total);
}

static void *h_mallocx(size_t n, int flags)
{
	return too_big(n) ? NULL : stamped(inner.mallocx(n + TAG, flags), n);
}

static void h_free(void *p)
{
	if (!p)
		return;
	size_t u;
	check(p, &u, "free(): invalid pointer", "free(): invalid next size (fast)");
	hz_hardened_clear(p, u, 0);
	struct hz_evicted ev;
	if (hz_quarantine_put(p, u, &ev))
		bad("free(): double free detected in tcache 2");
	for (unsigned i = 0; i < ev.count; i++) {
		const unsigned char *b = ev.p[i];
		unsigned char any = 0;
		for (size_t k = 0, m = ev.n[i] < WRITE_CHECK ? ev.n[i] : WRITE_CHECK; k < m; k++)
			any |= b[k];
		if (any)
			bad("free(): a freed block was written to (write after free)");
		inner.free(ev.p[i]);
	}
}

static void h_dallocx(void *p, int flags)
{
	(void)flags;
	h_free(p);
}

static void h_sdallocx(void *p, size_t size, int flags)
{
	(void)size;
	(void)flags;
	h_free(p);
}

static size_t h_usable(void *p)
{
	size_t u;
	return p ? check(p, &u, "malloc_usable_size(): invalid pointer", "malloc_usable_size(): invalid next size")
		 : 0;
}

/* realloc and rallocx: in place while it fits the block beneath (the
 * canary moved), else a new block, the bytes copied, the old one freed
 * as free does (never the engine's own realloc, which would give the
 * old block back uncleared). */
static void *resized(void *p, size_t n, int flags)
{
	size_t u, old = check(p, &u, "realloc(): invalid pointer", "realloc(): invalid next size");
	if (too_big(n))
		return NULL;
	size_t align = HZ_JE_ALIGN_OF(flags);
	if (n + TAG <= u && (!align || ((uintptr_t)p & (align - 1)) == 0)) {
		unsigned char *b = p;
		if (n > old) {
			hz_memzero(b + old, sizeof(uint64_t)); /* the old canary */
			if (flags & HZ_JE_ZERO)
				hz_memzero(b + old, n - old);
		} else {
			hz_memzero(b + n, old - n + sizeof(uint64_t)); /* given up, and the old canary */
		}
		stamp(b, n, u);
		return p;
	}
	void *q = flags ? h_mallocx(n, flags) : h_malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	h_free(p);
	return q;
}

static void *h_realloc(void *p, size_t n)
{
	if (!p)
		return h_malloc(n);
	if (!n) {
		h_free(p);
		return NULL;
	}
	return resized(p, n, 0);
}

static void *h_rallocx(void *p, size_t n, int flags)
{
	return resized(p, n ? n : 1, flags);
}

static size_t h_xallocx(void *p, size_t size, size_t extra, int flags)
{
	(void)size;
	(void)extra;
	(void)flags;
	return h_usable(p); /* resized only by rallocx */
}

static size_t h_nallocx(size_t n, int flags)
{
	return n <= SIZE_MAX - TAG && inner.nallocx(n + TAG, flags) ? n : 0;
}

void hz_small_harden(void)
{
	inner = hz_small;
	secret_tag = hz_os_random64();
	secret_canary = hz_os_random64();
	hz_os_main_stack(&stack_lo, &stack_hi);
	hz_small = (struct hz_small_engine){
		h_malloc,  h_calloc,  h_realloc, h_free,    h_usable,   h_mallocx,
		h_rallocx, h_xallocx, h_nallocx, h_dallocx, h_sdallocx, inner.jemalloc,
	};
}
