/* What a program does that the library's threads and shortcuts must not
 * change (invisible.c, libhugezero.so only): calls caught on their way to
 * the C library, the library acting first, the call then going on to the
 * next definition (the C library's, or a library loaded after this one):
 * - longjmp and its kin: a memset split over the helpers that the jump
 *   leaves (a signal handler's) ends before the jump, so nothing writes
 *   after it;
 * - mprotect, pkey_mprotect, madvise(MADV_GUARD_INSTALL): a block whose
 *   protection the program changes is never written by a helper (a fault
 *   there would not reach the program's SIGSEGV handler);
 * - unshare and setns, which need a single-threaded process: the
 *   library's threads end first and start again lazily after;
 * - prctl(PR_SET_SECCOMP): they end first and never start again, since a
 *   filter may refuse what they do (a filter installed by a raw
 *   seccomp(2) is found before a thread is made: crew.c). Strict mode
 *   and PR_SET_TSC(PR_TSC_SIGSEGV) stop every read of the time-stamp
 *   counter (a thread that reads it then dies): large fills no longer
 *   time themselves (arch/learn.c), the clocks become the coarse ones. A
 *   raw prctl or seccomp(2) that turns the counter off is not seen.
 * libhugezero.a catches none of these: its program's calls go to the C
 * library by name (docs/design.md, "Invisible to the program"). */
#define _GNU_SOURCE
/* Fortified builds define longjmp and its kin as __longjmp_chk: this file
 * defines each of them. */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include "../allocator/allocator.h"
#include "../os/os.h"
#include "preload.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* The next definitions, found at load (a jump from a signal handler must
 * not look them up: dl_iterate_phdr takes the loader's lock). */
enum { LONGJMP, SIGLONGJMP, _LONGJMP, LONGJMP_CHK, MPROTECT, PKEY_MPROTECT, MADVISE, UNSHARE, SETNS, PRCTL, NEXTS };
static const char *const names[NEXTS] = {"longjmp", "siglongjmp", "_longjmp", "__longjmp_chk", "mprotect",
					 "pkey_mprotect", "madvise", "unshare", "setns", "prctl"};
static void *next[NEXTS];

static void *next_of(int i)
{
	void *f = __atomic_load_n(&next[i], __ATOMIC_ACQUIRE);
	if (!f) {
		const char *const one[1] = {names[i]};
		if (hz_next_family(one, &f, 1))
			f = hz_glibc_symbol(names[i]);
		__atomic_store_n(&next[i], f, __ATOMIC_RELEASE);
	}
	return f;
}

__attribute__((constructor)) static void find_nexts(void)
{
	for (int i = 0; i < NEXTS; i++)
		next_of(i);
}

/* ---- jumps ---- */

typedef void (*jump_fn)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));

static __attribute__((noreturn)) void jump(int i, struct __jmp_buf_tag *env, int val)
{
	hz_helpers_jumped();
	jump_fn f = (jump_fn)next_of(i);
	if (!f)
		hz_bad_pointer("hugezero: no longjmp in the C library");
	f(env, val);
}

HZ_EXPORT void longjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(LONGJMP, env, val);
}

HZ_EXPORT void siglongjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(SIGLONGJMP, env, val);
}

HZ_EXPORT void _longjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(_LONGJMP, env, val);
}

HZ_EXPORT void __longjmp_chk(struct __jmp_buf_tag env[1], int val)
{
	jump(LONGJMP_CHK, env, val);
}

/* ---- protection ---- */

/* A function that was not found: glibc's answer for a missing one. */
static int missing(void)
{
	errno = ENOSYS;
	return -1;
}

HZ_EXPORT int mprotect(void *p, size_t len, int prot)
{
	int (*f)(void *, size_t, int) = (int (*)(void *, size_t, int))next_of(MPROTECT);
	hz_large_protected(p, len);
	return f ? f(p, len, prot) : missing();
}

HZ_EXPORT int pkey_mprotect(void *p, size_t len, int prot, int pkey)
{
	int (*f)(void *, size_t, int, int) = (int (*)(void *, size_t, int, int))next_of(PKEY_MPROTECT);
	hz_large_protected(p, len);
	return f ? f(p, len, prot, pkey) : missing();
}

HZ_EXPORT int madvise(void *p, size_t len, int advice)
{
	int (*f)(void *, size_t, int) = (int (*)(void *, size_t, int))next_of(MADVISE);
	if (advice == MADV_GUARD_INSTALL)
		hz_large_protected(p, len);
	return f ? f(p, len, advice) : missing();
}

/* ---- a single-threaded process ---- */

/* How long the library's threads are waited for at most. */
#define QUIESCE_NS ((uint64_t)1000000000u)
/* A thread that has ended leaves the kernel's thread group a moment
 * later: a call refused meanwhile (EINVAL) is made again, this often at
 * most, a millisecond apart. */
#define RETRIES 50

/* Every thread of the library ended (never to start again with forever):
 * whether any was running. */
static int quiesce(int forever)
{
	int ran = hz_helpers_quiesce(forever, QUIESCE_NS) != 0;
	ran |= hz_zeroer_quiesce(forever, QUIESCE_NS);
	ran |= hz_stats_quiesce(forever, QUIESCE_NS);
	return ran;
}

/* Whether a thread of the library may still be in the kernel's thread
 * group after the quiesce: one ran then, or one was started in this
 * process (it may have ended just before, its own way, and leave the
 * group a moment later: unshare refused with EINVAL meanwhile). */
static int may_linger(int ran)
{
	struct hz_zeroer_stats z;
	struct hz_helpers_stats h;
	if (ran)
		return 1;
	hz_zeroer_stats(&z);
	hz_helpers_stats(&h);
	return z.starts || h.starts;
}

HZ_EXPORT int unshare(int flags)
{
	int (*f)(int) = (int (*)(int))next_of(UNSHARE);
	if (!f)
		return missing();
	/* Only these need the process single-threaded (CLONE_NEWUSER
	 * implies CLONE_THREAD): unshare(2). */
	if (!(flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_VM | CLONE_SIGHAND)))
		return f(flags);
	int linger = may_linger(quiesce(0)), r;
	for (int i = 0; (r = f(flags)) && errno == EINVAL && linger && i < RETRIES; i++)
		hz_os_sleep_ms(1);
	return r;
}

HZ_EXPORT int setns(int fd, int nstype)
{
	int (*f)(int, int) = (int (*)(int, int))next_of(SETNS);
	if (!f)
		return missing();
	/* A user or mount namespace needs it, and a descriptor may name
	 * either whatever nstype says. */
	int linger = may_linger(quiesce(0)), r;
	for (int i = 0; (r = f(fd, nstype)) && errno == EINVAL && linger && i < RETRIES; i++)
		hz_os_sleep_ms(1);
	return r;
}

HZ_EXPORT int prctl(int option, ...)
{
	int (*f)(int, ...) = (int (*)(int, ...))next_of(PRCTL);
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),
		      a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (!f)
		return missing();
	/* Strict seccomp and PR_TSC_SIGSEGV take the time-stamp counter away
	 * from the thread: no fill of the library times itself any more, and
	 * the clocks (free and malloc read them) are the coarse ones. Any
	 * seccomp mode ends the library's threads, as before. */
	if ((option == PR_SET_SECCOMP && a2 == SECCOMP_MODE_STRICT) || (option == PR_SET_TSC && a2 == PR_TSC_SIGSEGV)) {
		hz_learn_stop();
		hz_os_clock_by_call();
	}
	if (option == PR_SET_SECCOMP)
		quiesce(1);
	return f(option, a2, a3, a4, a5);
}
