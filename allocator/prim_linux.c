/* Linux OS primitives by raw syscall (see prim.h). */
#include <errno.h>
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "prim.h"

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif

static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	return syscall(nr, a, b, c, d, e, f);
}

/* syscall() returns -1 and sets errno; turn that into -errno. */
static long ret(long r)
{
	return r == -1 ? -errno : r;
}

static void *map_raw(size_t size, int flags)
{
	long r = sys6(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | flags, -1, 0);
	return r == -1 ? NULL : (void *)r;
}

void *hz_os_map(size_t size, size_t align)
{
	if (size == 0 || size > SIZE_MAX - align) {
		errno = ENOMEM;
		return NULL;
	}
	/* Over-map by the alignment and trim both ends: one extra syscall or
	 * two only when the kernel's placement is not aligned already. */
	size_t ps = hz_page_size;
	size_t extra = align > ps ? align - ps : 0;
	unsigned char *m = map_raw(size + extra, 0);
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	uintptr_t a = ((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1);
	size_t head = a - (uintptr_t)m, tail = extra - head;
	if (head)
		hz_os_unmap(m, head);
	if (tail)
		hz_os_unmap((void *)(a + size), tail);
	return (void *)a;
}

void *hz_os_map_hugetlb(size_t size)
{
	return map_raw(size, MAP_HUGETLB | MAP_HUGE_2MB);
}

int hz_os_unmap(void *p, size_t size)
{
	return (int)ret(syscall(SYS_munmap, p, size));
}

int hz_os_hugepage(void *p, size_t size)
{
	return (int)ret(syscall(SYS_madvise, p, size, MADV_HUGEPAGE));
}

int hz_os_dontneed(void *p, size_t size)
{
	return (int)ret(syscall(SYS_madvise, p, size, MADV_DONTNEED));
}

void *hz_os_remap(void *p, size_t old_size, size_t new_size, void *dst)
{
	long r = dst ? syscall(SYS_mremap, p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst)
		     : syscall(SYS_mremap, p, old_size, new_size, MREMAP_MAYMOVE);
	return r == -1 ? NULL : (void *)r;
}

/* Batched release state: the pidfd and the pid it belongs to (a forked
 * child must not advise its parent), and whether process_madvise works. */
static int batch_fd = -1;
static long batch_pid;
static int batch_state = -1; /* -1 unknown, 1 works, 0 refused */

int hz_os_batch_state(void)
{
	return __atomic_load_n(&batch_state, __ATOMIC_RELAXED);
}

void hz_os_batch_reset(void)
{
	__atomic_store_n(&batch_state, -1, __ATOMIC_RELAXED);
}

/* The pidfd of this process, opened once per process; -errno on failure. */
static int self_pidfd(void)
{
	long pid = syscall(SYS_getpid);
	int fd = __atomic_load_n(&batch_fd, __ATOMIC_ACQUIRE);
	if (fd >= 0 && __atomic_load_n(&batch_pid, __ATOMIC_RELAXED) == pid)
		return fd;
	long nfd = syscall(SYS_pidfd_open, pid, 0);
	if (nfd < 0)
		return -errno;
	int old = fd;
	if (__atomic_compare_exchange_n(&batch_fd, &old, (int)nfd, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		/* A stale fd inherited over fork stays open: closing it could
		 * race with a thread still using it, and it is one fd. */
		__atomic_store_n(&batch_pid, pid, __ATOMIC_RELAXED);
		return (int)nfd;
	}
	syscall(SYS_close, nfd); /* another thread won; use its fd */
	return old;
}

static int refused(int err)
{
	return err == ENOSYS || err == EINVAL || err == EPERM || err == EBADF;
}

void hz_os_release_batch(const struct hz_range *r, size_t n, struct hz_release_result *out)
{
	*out = (struct hz_release_result){0};
	size_t i = 0;
	if (hz_os_batch_state() != 0) {
		struct iovec iov[HZ_RELEASE_BATCH];
		int fd = self_pidfd();
		while (fd >= 0 && i < n) {
			size_t k = 0, bytes = 0;
			for (; k < HZ_RELEASE_BATCH && i + k < n; k++) {
				iov[k].iov_base = r[i + k].p;
				iov[k].iov_len = r[i + k].len;
				bytes += r[i + k].len;
			}
			long done = syscall(SYS_process_madvise, fd, iov, k, MADV_DONTNEED, 0);
			out->syscalls++;
			if (done < 0) {
				if (refused(errno))
					break;
				out->error = errno;
				return;
			}
			__atomic_store_n(&batch_state, 1, __ATOMIC_RELAXED);
			out->ranges += k;
			out->bytes += (size_t)done;
			i += k;
			if ((size_t)done != bytes) { /* partial: finish one by one */
				out->error = EAGAIN;
				break;
			}
		}
		if (i < n && !out->error) {
			__atomic_store_n(&batch_state, 0, __ATOMIC_RELAXED);
			out->fallbacks = 1;
		}
	} else {
		out->fallbacks = 1;
	}
	/* Range by range: after a refusal, and for what a partial batch left. */
	for (; i < n; i++) {
		int e = hz_os_dontneed(r[i].p, r[i].len);
		out->syscalls++;
		if (e) {
			out->error = -e;
			continue;
		}
		out->ranges++;
		out->bytes += r[i].len;
	}
	if (out->error == EAGAIN)
		out->error = 0;
}
