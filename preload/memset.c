/* The interposed memset family.
 *
 * Binding: memset is the architecture's widest front end itself, behind
 * one test of a flag the engine's setup sets once it found that the CPU
 * runs that front end. Otherwise (and before setup) the call leaves,
 * before any instruction of the wide ISA, through hz_memset_impl: a
 * pointer to the front end every CPU of the architecture runs, also set
 * once by setup. No jump stands between the PLT and the stores: a jump
 * cost about 0.5 ns there, 20% of a small memset. tests/preload/
 * front_guard.sh checks that the compiler kept the wide instructions
 * behind the test. Not an IFUNC: libraries linked with -z now (bash's
 * libtinfo, libselinux) are relocated before a preloaded library, and the
 * dynamic linker then warns on stderr ("Relink ... for IFUNC symbol") in
 * every such program and runs the resolver early. Sizes above
 * HZ_FRONT_MAX go to a policy that starts with the portable kernel and is
 * replaced once by setup: no locks, no allocation, no syscalls, no lazy
 * initialisation. A large memset split over the helpers keeps that: its
 * offer is one compare-and-swap to helpers already polling; only a wait
 * for a helper's step that outlasts 2 ms of spinning sleeps
 * (allocator/helpers.c).
 *
 * On x86-64 this file is built with -ffixed-xmm0..15 (CMakeLists.txt), so
 * memset uses zmm16-31 and needs no vzeroupper: keep every other function
 * here free of floating-point and vector code. */
#include <stddef.h>

#include "../arch/arch.h"
#include "../obs/obs.h"
#include "preload.h"

HZ_INIT_LINK; /* the constructor comes with this file (init.c) */

extern void __chk_fail(void) __attribute__((noreturn));

/* The huge block of the arenas that [p, p + n) lies in, or NULL: memory
 * whose stores cannot fault in a way the program handles (no file behind
 * it; its mark, set when the program changes its protection (invisible.c),
 * is checked by the caller), so helper threads may write it. */
static struct hz_huge *one_block(const void *p, size_t n)
{
	struct hz_owner o = hz_large_owner(p); /* p within the block when o.huge */
	return o.huge && n <= (uintptr_t)o.huge->base + o.huge->mapped - (uintptr_t)p ? o.huge : NULL;
}

/* The program's large memset: the policy's kernel, counted; from
 * HZ_HELPERS_MIN, in a block of the arenas the program never protected,
 * split over the helpers on idle cores where they can take part
 * (helpers.c), and where the program's jumps pass through the library
 * (not in libhugezero.a). */
static void *fill(void *p, int c, size_t n)
{
	struct hz_huge *h = n >= HZ_HELPERS_MIN && hz_sees_jumps ? one_block(p, n) : NULL;
	if (h && !__atomic_load_n(&h->program_protected, __ATOMIC_SEQ_CST)) {
		unsigned k;
		if (hz_helpers_fill(p, c, n, 0, &h->program_protected, &k)) {
			hz_count_kernel(k, n);
			return p;
		}
	}
	return hz_fill_counted(p, c, n);
}

/* A large memset in the arms (ab.c): glibc's (arm A) or hugezero's (arm
 * B), timed. */
static HZ_NOINLINE void *memset_arm(void *p, int c, size_t n, int arm)
{
	uint64_t t0 = hz_os_now_ns();
	if (arm == HZ_AB_A)
		hz_ab_baseline(p, c, n);
	else
		fill(p, c, n);
	hz_ab_record(HZ_AB_MEMSET, arm, n, hz_os_now_ns() - t0);
	return p;
}

/* memset's way out above HZ_FRONT_MAX, from the front end or from
 * memset_else (below). The program's large memset is the policy's kernel,
 * counted (its calls and bytes are the per-thread classes' of
 * memset_large: no atomic before the kernel, which would wait for the
 * last call's stores to drain). */
static HZ_NOINLINE void *memset_large(void *p, int c, size_t n)
{
	hz_count(HZ_OP_MEMSET, n);
	hz_stats_child_check();
	if (hz_unlikely(hz_mode_off))
		return hz_memset_impl(p, c, n);
	if (hz_unlikely(hz_callsites_on))
		hz_callsite(n);
	int arm = hz_ab_arm(HZ_AB_MEMSET, n);
	if (hz_unlikely(arm))
		return memset_arm(p, c, n, arm);
	return fill(p, c, n);
}

/* memset where the widest front end does not run: on a CPU without its
 * ISA (an AVX2 one), before setup, or in off mode. Small sizes jump
 * straight to the pointer's front end: through memset_large, whose frame
 * is set up before its size test, the call took 1.26-1.44x glibc's time
 * on an AVX2 CPU (churn_bench memset0), 1.16-1.26x so. */
static inline void *memset_else(void *p, int c, size_t n)
{
	if (hz_likely(n <= HZ_FRONT_MAX))
		return hz_memset_impl(p, c, n);
	return memset_large(p, c, n);
}

/* memset is the architecture's widest front end (arch/<cpu>/widest.h and
 * the arch/memset_small.h template), guarded by hz_memset_widest_ok. */
#include "widest.h"
#define HZ_FRONT memset
#define HZ_FRONT_GUARD __atomic_load_n(&hz_memset_widest_ok, __ATOMIC_RELAXED)
#define HZ_FRONT_ELSE memset_else
#define HZ_FRONT_LARGE memset_large
#define HZ_FRONT_VISIBILITY HZ_EXPORT
#include "../arch/memset_small.h"
#pragma GCC pop_options

/* glibc's __memset_chk calls glibc's internal memset, so fortified
 * programs (_FORTIFY_SOURCE) would bypass memset's interposition. On
 * overflow it fails exactly as glibc does, through glibc's __chk_fail. */
HZ_EXPORT void *__memset_chk(void *p, int c, size_t n, size_t dstlen)
{
	if (hz_unlikely(dstlen < n))
		__chk_fail();
	if (n >= HZ_COUNT_MIN)
		hz_tstats_mine()->memset_chk_calls++;
	return memset(p, c, n);
}

/* The embedded jemalloc's memset (scripts/jemalloc-rename.sh renames its
 * calls): the same clearing, not counted as the program's. */
void *hz_je_memset(void *p, int c, size_t n)
{
	return n > HZ_FRONT_MAX ? hz_fill_counted(p, c, n) : hz_memset_impl(p, c, n);
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
