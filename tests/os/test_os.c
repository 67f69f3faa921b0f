/* The OS contract (os/os.h): aligned mappings and the error convention (0 or an
 * errno value, errno itself untouched), batched release with its
 * fallback and its behaviour across fork, files and the clock. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../os/os.h"
#include "../util/fillcheck.h"

#define NB 64

static unsigned char *map_blocks(void)
{
	void *m;
	cr_assert_eq(hz_os_map(NB * HZ_HUGE_SIZE, HZ_HUGE_SIZE, &m), 0);
	unsigned char *p = m;
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

Test(os, map_aligned_and_bad_sizes)
{
	for (size_t align = hz_page_size; align <= ((size_t)64 << 20); align *= 8) {
		void *p = NULL;
		cr_assert_eq(hz_os_map(3 * hz_page_size, align, &p), 0);
		cr_assert_eq((uintptr_t)p % align, 0);
		cr_assert_eq(hz_os_unmap(p, 3 * hz_page_size), 0);
	}
	/* Failures are answered with the errno value; errno stays as it was. */
	void *p = &p;
	errno = 12345;
	cr_assert_eq(hz_os_map(SIZE_MAX - 4095, hz_page_size, &p), ENOMEM);
	cr_assert_eq(hz_os_map((size_t)1 << 62, HZ_HUGE_SIZE, &p), ENOMEM);
	cr_assert_eq(hz_os_map(0, hz_page_size, &p), ENOMEM);
	cr_assert_eq(hz_os_map(hz_page_size, 3 * hz_page_size, &p), EINVAL, "alignment not a power of two");
	cr_assert_eq(hz_os_map(hz_page_size, hz_page_size / 2, &p), EINVAL, "alignment below a page");
	cr_assert_eq(hz_os_unmap((void *)1, hz_page_size), EINVAL);
	cr_assert_eq(hz_os_dontneed((void *)1, hz_page_size), EINVAL);
	cr_assert_neq(hz_os_remap((void *)1, hz_page_size, 2 * hz_page_size, NULL, &p), 0);
	cr_assert_eq(p, (void *)&p, "a failed call wrote its result");
	cr_assert_eq(errno, 12345, "errno changed to %d", errno);
}

/* Whether this kernel, under this process's seccomp filter, releases
 * memory with process_madvise (Linux 6.13 and later take MADV_DONTNEED
 * there): asked directly, with one scratch page, not through the library. */
static int kernel_batches(void)
{
	void *m;
	cr_assert_eq(hz_os_map(hz_page_size, hz_page_size, &m), 0);
	*(volatile char *)m = 1;
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	struct iovec iov = {m, hz_page_size};
	long done = fd < 0 ? -1 : syscall(SYS_process_madvise, fd, &iov, 1, MADV_DONTNEED, 0);
	int zero = *(volatile char *)m == 0;
	if (fd >= 0)
		close(fd);
	hz_os_unmap(m, hz_page_size);
	cr_assert(done != (long)hz_page_size || zero, "released, and the page not zero");
	return done == (long)hz_page_size;
}

Test(os, release_batch_zeroes_in_few_syscalls)
{
	unsigned char *p = map_blocks();
	struct hz_range r[NB];
	blocks(p, r);
	struct hz_release_result res;
	hz_os_release_batch(r, NB, &res);
	cr_assert_eq(res.error, 0);
	cr_assert_eq(res.ranges, NB);
	cr_assert_eq(res.bytes, NB * HZ_HUGE_SIZE);
	/* What the kernel allows, not what happened: where it batches, the
	 * library must have taken one call; elsewhere fallen back, counted. */
	if (kernel_batches()) {
		cr_assert_eq(hz_os_batch_state(), 1, "this kernel batches, the library did not");
		cr_assert_eq(res.syscalls, 1, "%u syscalls for %d ranges", res.syscalls, NB);
		cr_assert_eq(res.fallbacks, 0);
	} else {
		cr_assert_eq(hz_os_batch_state(), 0);
		cr_assert_eq(res.fallbacks, 1, "no batch and no fallback counted");
		cr_assert_eq(res.syscalls, NB + 1);
	}
	size_t bad;
	cr_assert(all_bytes(p, NB * HZ_HUGE_SIZE, 0, &bad), "byte %zu not zero after release", bad);
	hz_os_unmap(p, NB * HZ_HUGE_SIZE);
}

/* A batch the kernel completes only in part (a range in the middle is not
 * mapped): the rest is released range by range, the failure reported, so
 * that no caller counts the pages as zero. errno is left alone. */
Test(os, release_partial_batch_reports_failure)
{
	size_t ps = hz_page_size;
	void *m;
	cr_assert_eq(hz_os_map(3 * ps, ps, &m), 0);
	unsigned char *p = m;
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
}

/* A seccomp filter that refuses process_madvise with errno e. */
static void refuse(long nr, int e)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)e),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		_exit(90);
}

/* Minor faults: the thread's grow by the pages it touches, the process's
 * are at least the thread's; refused by a filter, an errno, not figures. */
Test(os, minor_faults)
{
	uint64_t p0, t0, p1, t1;
	cr_assert_eq(hz_os_minor_faults(&p0, &t0), 0);
	void *m;
	cr_assert_eq(hz_os_map(64 * 4096, 4096, &m), 0);
	for (int i = 0; i < 64; i++)
		((volatile char *)m)[i * 4096] = 1;
	cr_assert_eq(hz_os_minor_faults(&p1, &t1), 0);
	cr_assert_geq(t1 - t0, 64, "%llu faults for 64 pages", (unsigned long long)(t1 - t0));
	cr_assert_geq(p1, t1);
	cr_assert_geq(p1 - p0, t1 - t0);
	hz_os_unmap(m, 64 * 4096);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		refuse(SYS_getrusage, EPERM);
		uint64_t p = 7, t = 7;
		errno = 0;
		int e = hz_os_minor_faults(&p, &t);
		_exit(e == EPERM && errno == 0 && p == 7 && t == 7 ? 0 : 1);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "refused getrusage: child status %#x", st);
}

/* In a child whose seccomp filter refuses process_madvise (as container
 * defaults may), the release still happens, range by range, counted. */
Test(os, release_fallback_under_seccomp)
{
	int errs[] = {EPERM, ENOSYS};
	for (int i = 0; i < 2; i++) {
		unsigned char *p = map_blocks();
		pid_t pid = fork();
		cr_assert_neq(pid, -1);
		if (pid == 0) {
			refuse(SYS_process_madvise, errs[i]);
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
Test(os, release_after_fork_is_the_childs)
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

/* Files: a small file read whole and NUL-terminated; a private file made
 * with mode 0600, an existing one of this user's truncated, and neither a
 * symlink followed nor a FIFO opened. errno untouched throughout. */
struct names {
	int n, f, l;
};

/* The entries of dir into *seen: 0, or the errno value. */
static int collect_names(const char *dir, struct names *seen)
{
	static struct hz_os_dir d;
	if (hz_os_dir_open(&d, dir))
		return d.error;
	for (const char *name; (name = hz_os_dir_next(&d));) {
		seen->n++;
		seen->f |= !strcmp(name, "f");
		seen->l |= !strcmp(name, "l");
	}
	hz_os_dir_close(&d);
	return d.error;
}

Test(os, files)
{
	char dir[] = "/tmp/hz-os-XXXXXX", path[128], link[128], fifo[128], buf[64];
	size_t len = 99;
	int fd;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/f", dir);
	snprintf(link, sizeof link, "%s/l", dir);
	snprintf(fifo, sizeof fifo, "%s/p", dir);
	errno = 12345;
	cr_assert_eq(hz_os_read_file(path, buf, sizeof buf, &len), ENOENT);
	cr_assert_eq(hz_os_create_file(path, 0600, &fd), 0);
	cr_assert_eq(hz_os_write_all(fd, "hello", 5), 0);
	hz_os_close(fd);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(hz_os_read_file(path, buf, sizeof buf, &len), 0);
	cr_assert_eq(len, 5);
	cr_assert_str_eq(buf, "hello");
	cr_assert_eq(hz_os_read_file(path, buf, 3, &len), 0, "cut to the buffer");
	cr_assert_str_eq(buf, "he");
	cr_assert_eq(hz_os_create_file(path, 0600, &fd), 0, "an existing file of this user");
	hz_os_close(fd);
	cr_assert_eq(hz_os_read_file(path, buf, sizeof buf, &len), 0);
	cr_assert_eq(len, 0, "not truncated");
	cr_assert_eq(symlink(path, link), 0);
	cr_assert_neq(hz_os_create_file(link, 0600, &fd), 0, "a symlink was followed");
	/* Present: a file, a symbolic link (a dangling one too, as
	 * /etc/malloc.conf is: its target is jemalloc's options); absent:
	 * nothing there, or a file where a directory is named. */
	char dangling[128], under[160];
	snprintf(dangling, sizeof dangling, "%s/d", dir);
	snprintf(under, sizeof under, "%s/x", path);
	cr_assert_eq(symlink("junk:true", dangling), 0);
	cr_assert_eq(hz_os_path_present(path), 1);
	cr_assert_eq(hz_os_path_present(link), 1);
	cr_assert_eq(hz_os_path_present(dangling), 1);
	cr_assert_eq(hz_os_path_present(fifo), 0, "not made yet");
	cr_assert_eq(hz_os_path_present(under), 0);
	cr_assert_eq(unlink(dangling), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_neq(hz_os_create_file(fifo, 0600, &fd), 0, "a FIFO was taken");
	cr_assert_eq(errno, 12345, "errno changed to %d", errno);
	/* A shared file (a collector of another user reads it), renamed over
	 * the symlink (replaced, not followed), then removed. */
	char shared[128];
	snprintf(shared, sizeof shared, "%s/s", dir);
	mode_t mask = umask(077); /* not applied */
	cr_assert_eq(hz_os_create_file(shared, 0644, &fd), 0);
	umask(mask);
	hz_os_close(fd);
	cr_assert_eq(stat(shared, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644);
	cr_assert_eq(hz_os_rename(shared, link), 0);
	cr_assert_eq(lstat(link, &st), 0);
	cr_assert(S_ISREG(st.st_mode), "the symlink was followed, not replaced");
	cr_assert_eq(hz_os_read_file(path, buf, sizeof buf, &len), 0, "its target is still there");
	cr_assert_eq(hz_os_rename(shared, link), ENOENT);
	/* The directory's entries (the file, the FIFO, the renamed one), a
	 * file's age, whether a process exists. */
	struct names seen = {0, 0, 0};
	cr_assert_eq(collect_names(dir, &seen), 0);
	cr_assert_eq(seen.n, 3, "%d entries", seen.n);
	cr_assert(seen.f && seen.l);
	cr_assert_eq(collect_names(path, &seen), ENOTDIR);
	uint64_t mtime = 0, now = hz_os_realtime_ns();
	cr_assert_eq(hz_os_mtime_ns(link, &mtime), 0);
	cr_assert(mtime <= now && now - mtime < (uint64_t)60 * 1000000000u, "mtime %llu, now %llu",
		  (unsigned long long)mtime, (unsigned long long)now);
	cr_assert_eq(hz_os_mtime_ns(shared, &mtime), ENOENT, "renamed away");
	cr_assert_eq(hz_os_pid_exists(getpid()), 1);
	cr_assert_eq(hz_os_pid_exists(1), 1, "init, another user's or not, exists");
	cr_assert_eq(hz_os_pid_exists(2000000001), 0, "above any pid_max");
	cr_assert_eq(hz_os_pid_exists(0), 1, "0 is a process group: the safe answer");
	cr_assert_eq(hz_os_unlink(link), 0);
	cr_assert_eq(hz_os_unlink(link), ENOENT);
	cr_assert_eq(errno, 12345, "errno changed to %d", errno);
	unlink(fifo);
	unlink(path);
	rmdir(dir);
}

Test(os, clock_and_environment)
{
	uint64_t t0 = hz_os_now_ns();
	hz_os_sleep_ms(20);
	uint64_t t1 = hz_os_now_ns();
	cr_assert_geq(t1 - t0, 20000000u, "slept %llu ns", (unsigned long long)(t1 - t0));
	cr_assert_gt(hz_os_realtime_ns(), (uint64_t)1600000000 * 1000000000u);
	setenv("HZ_PRIM_TEST", "yes", 1);
	cr_assert_str_eq(hz_os_getenv("HZ_PRIM_TEST"), "yes");
	cr_assert_null(hz_os_getenv("HZ_PRIM_TEST_UNSET"));
	cr_assert_eq(hz_os_pid(), getpid());
	char cwd[4096];
	cr_assert_eq(hz_os_cwd(cwd, sizeof cwd), 0);
	cr_assert_eq(cwd[0], '/');
	cr_assert_eq(hz_os_cwd(cwd, 1), ERANGE);
}

Test(os, main_stack)
{
	uintptr_t lo, hi;
	volatile char local[64];
	local[0] = 1;
	hz_os_main_stack(&lo, &hi);
	cr_assert_lt(lo, hi, "not known: [%#lx, %#lx)", (unsigned long)lo, (unsigned long)hi);
	cr_assert_leq(hi - lo, (uintptr_t)128 << 20);
	cr_assert((uintptr_t)local >= lo && (uintptr_t)local < hi, "a local at %p, not in [%#lx, %#lx)",
		  (void *)local, (unsigned long)lo, (unsigned long)hi);
	void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	cr_assert((uintptr_t)m + (1 << 20) <= lo || (uintptr_t)m >= hi, "a mapping at %p inside", m);
	munmap(m, 1 << 20);
	/* The reach is the stack's limit. */
	struct rlimit old, one;
	getrlimit(RLIMIT_STACK, &old);
	one = (struct rlimit){1 << 20, old.rlim_max};
	cr_assert_eq(setrlimit(RLIMIT_STACK, &one), 0);
	hz_os_main_stack(&lo, &hi);
	setrlimit(RLIMIT_STACK, &old);
	cr_assert_eq(hi - lo, (uintptr_t)1 << 20);
}

/* Residency: one byte per page, bit 0 where the page is in memory; the
 * count agrees; a range not mapped is ENOMEM, errno untouched. */
Test(os, residency)
{
	unsigned char *p = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(p, MAP_FAILED);
	cr_assert_eq(hz_os_nohugepage(p, 8 * 4096), 0);
	p[1 * 4096] = 1;
	p[6 * 4096 + 9] = 1;
	unsigned char v[8];
	size_t n = 0;
	memset(v, 0xfe, sizeof v);
	cr_assert_eq(hz_os_residency(p, 8, v), 0);
	for (int k = 0; k < 8; k++)
		cr_assert_eq(v[k] & 1, k == 1 || k == 6, "page %d: %u", k, v[k]);
	cr_assert_eq(hz_os_count_resident(p, 8, &n), 0);
	cr_assert_eq(n, 2);
	munmap(p + 4 * 4096, 4096);
	errno = 1234;
	cr_assert_eq(hz_os_residency(p, 8, v), ENOMEM);
	cr_assert_eq(errno, 1234);
	munmap(p, 8 * 4096);
}
