/* The interposed memset family. Nothing but the exported ABI lives here.
 *
 * Binding: memset is an IFUNC. The resolver runs while the dynamic linker
 * (or a static program's start-up) applies relocations, before any
 * constructor, and picks the small-size front end for this CPU once; after
 * that a call is one indirect jump through the GOT, as with glibc's own
 * memset, with no per-call test of a pointer or an initialisation flag.
 * The resolver only executes CPUID (hz_memset_select), so it is safe before
 * the library is relocated. Sizes above HZ_SMALL_MAX go to a policy that
 * starts with a portable kernel and is replaced once by the constructor:
 * no locks, no allocation, no syscalls, no lazy initialisation. */
#include <stddef.h>

#include "../arch/arch.h"

extern void __chk_fail(void) __attribute__((noreturn));

static hz_memset_fn resolve_memset(void)
{
	return hz_memset_select();
}

HZ_EXPORT void *memset(void *p, int c, size_t n) __attribute__((ifunc("resolve_memset")));

/* glibc's __memset_chk calls glibc's internal memset, so fortified
 * programs (_FORTIFY_SOURCE) would bypass memset's interposition. On
 * overflow it fails exactly as glibc does, through glibc's __chk_fail. */
HZ_EXPORT void *__memset_chk(void *p, int c, size_t n, size_t dstlen)
{
	if (hz_unlikely(dstlen < n))
		__chk_fail();
	if (n >= HZ_COUNT_MIN)
		__atomic_fetch_add(&hz_counters_raw.memset_chk_calls, 1, __ATOMIC_RELAXED);
	return memset(p, c, n);
}

HZ_EXPORT void bzero(void *p, size_t n)
{
	memset(p, 0, n);
}

/* glibc exports bzero's older name too. */
HZ_EXPORT void __bzero(void *p, size_t n) __attribute__((alias("bzero")));

/* The empty asm takes p as an input and clobbers memory, so the compiler
 * must assume the zeroed bytes are read and cannot drop the stores. */
HZ_EXPORT void explicit_bzero(void *p, size_t n)
{
	memset(p, 0, n);
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* Fortified explicit_bzero, for the same reason as __memset_chk. */
HZ_EXPORT void __explicit_bzero_chk(void *p, size_t n, size_t dstlen)
{
	if (hz_unlikely(dstlen < n))
		__chk_fail();
	explicit_bzero(p, n);
}
