/* The allocator's OS primitives: aligned mappings, and batched release
 * with its fallback and its behaviour across fork. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../allocator/prim.h"
#include "fillcheck.h"

#define NB 64

static unsigned char *map_blocks(void)
{
	unsigned char *p = hz_os_map(NB * HZ_HUGE_SIZE, HZ_HUGE_SIZE);
	cr_assert_not_null(p);
	cr_assert_eq((uintptr_t)p % HZ_HUGE_SIZE, 0, "not 2 MiB aligned");
	hz_os_hugepage(p, NB * HZ_HUGE_SIZE);
	size_t bad;
	cr_assert(all_bytes(p, NB * HZ_HUGE_SIZE, 0, &bad), "fresh mapping not zero");
	memset(p, 0xAA, NB * HZ_HUGE_SIZE);
	return p;
}

static void blocks(unsigned char *p, struct hz_range *r)
{
	for (int i = 0; i < NB; i++)
		r[i] = (struct hz_range){p + (size_t)i * HZ_HUGE_SIZE, HZ_HUGE_SIZE};
}

Test(prim, map_aligned_and_bad_sizes)
{
	for (size_t align = hz_page_size; align <= ((size_t)64 << 20); align *= 8) {
		void *p = hz_os_map(3 * hz_page_size, align);
		cr_assert_not_null(p);
		cr_assert_eq((uintptr_t)p % align, 0);
		cr_assert_eq(hz_os_unmap(p, 3 * hz_page_size), 0);
	}
	errno = 0;
	cr_assert_null(hz_os_map(SIZE_MAX - 4095, hz_page_size));
	cr_assert_eq(errno, ENOMEM);
	errno = 0;
	cr_assert_null(hz_os_map((size_t)1 << 62, HZ_HUGE_SIZE));
	cr_assert_eq(errno, ENOMEM);
	cr_assert_null(hz_os_map(0, hz_page_size));
}

Test(prim, release_batch_zeroes_in_few_syscalls)
{
	unsigned char *p = map_blocks();
	struct hz_range r[NB];
	blocks(p, r);
	struct hz_release_result res;
	hz_os_release_batch(r, NB, &res);
	cr_assert_eq(res.error, 0);
	cr_assert_eq(res.ranges, NB);
	cr_assert_eq(res.bytes, NB * HZ_HUGE_SIZE);
	if (hz_os_batch_state() == 1)
		cr_assert_eq(res.syscalls, 1, "%u syscalls for %d ranges", res.syscalls, NB);
	else
		cr_assert_eq(res.fallbacks, 1, "no batch and no fallback counted");
	size_t bad;
	cr_assert(all_bytes(p, NB * HZ_HUGE_SIZE, 0, &bad), "byte %zu not zero after release", bad);
	hz_os_unmap(p, NB * HZ_HUGE_SIZE);
}

/* A batch the kernel completes only in part (a range in the middle is not
 * mapped): the rest is released range by range, the failure reported, so
 * that no caller counts the pages as zero. errno is left alone. */
Test(prim, release_partial_batch_reports_failure)
{
	size_t ps = hz_page_size;
	unsigned char *p = hz_os_map(3 * ps, ps);
	cr_assert_not_null(p);
	memset(p, 0xAB, 3 * ps);
	cr_assert_eq(hz_os_unmap(p + ps, ps), 0);
	struct hz_range r[3] = {{p, ps}, {p + ps, ps}, {p + 2 * ps, ps}};
	struct hz_release_result res;
	errno = 12345;
	hz_os_release_batch(r, 3, &res);
	cr_assert_eq(errno, 12345, "errno changed to %d", errno);
	cr_assert_neq(res.error, 0, "a range failed and was not reported");
	cr_assert_eq(res.ranges, 2);
	cr_assert_eq(res.bytes, 2 * ps);
	cr_assert_eq(p[0], 0);
	cr_assert_eq(p[2 * ps], 0, "the range after the failed one was not released");
	hz_os_unmap(p, ps);
	hz_os_unmap(p + 2 * ps, ps);
	errno = 0;
	cr_assert_null(hz_os_map(ps, 3 * ps), "alignment not a power of two");
	cr_assert_eq(errno, EINVAL);
}

/* A seccomp filter that refuses process_madvise with errno e. */
static void refuse_process_madvise(int e)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_madvise, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)e),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		_exit(90);
}

/* In a child whose seccomp filter refuses process_madvise (as container
 * defaults may), the release still happens, range by range, counted. */
Test(prim, release_fallback_under_seccomp)
{
	int errs[] = {EPERM, ENOSYS};
	for (int i = 0; i < 2; i++) {
		unsigned char *p = map_blocks();
		pid_t pid = fork();
		cr_assert_neq(pid, -1);
		if (pid == 0) {
			refuse_process_madvise(errs[i]);
			hz_os_batch_reset();
			struct hz_range r[NB];
			blocks(p, r);
			struct hz_release_result res;
			hz_os_release_batch(r, NB, &res);
			size_t bad;
			if (res.error || res.ranges != NB || res.fallbacks != 1 ||
			    res.syscalls != NB + 1 || hz_os_batch_state() != 0)
				_exit(1);
			if (!all_bytes(p, NB * HZ_HUGE_SIZE, 0, &bad))
				_exit(2);
			/* Remembered: the next batch goes straight to madvise. */
			hz_os_release_batch(r, 1, &res);
			_exit(res.syscalls == 1 && res.fallbacks == 1 ? 0 : 3);
		}
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "errno %d: child status %#x", errs[i], st);
		hz_os_unmap(p, NB * HZ_HUGE_SIZE);
	}
}

/* A child must advise itself, never its parent through an inherited
 * pidfd: the parent's copy keeps its bytes while the child's reads zero. */
Test(prim, release_after_fork_is_the_childs)
{
	unsigned char *p = map_blocks();
	struct hz_range r[NB];
	blocks(p, r);
	struct hz_release_result res;
	hz_os_release_batch(r, 1, &res); /* the parent opens its pidfd */
	memset(p, 0xAA, NB * HZ_HUGE_SIZE);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		hz_os_release_batch(r, NB, &res);
		size_t bad;
		_exit(res.error == 0 && all_bytes(p, NB * HZ_HUGE_SIZE, 0, &bad) ? 0 : 1);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	size_t bad;
	cr_assert(all_bytes(p, NB * HZ_HUGE_SIZE, 0xAA, &bad), "the child's release reached the parent at %zu", bad);
	hz_os_unmap(p, NB * HZ_HUGE_SIZE);
}
