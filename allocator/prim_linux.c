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

/* syscall() returns -1 and sets errno; turn that into -errno and leave
 * errno as it was (the allocator's callers must not see it change). */
static long ret(long r, int saved)
{
	long e = r == -1 ? -errno : r;
	errno = saved;
	return e;
}

static void *map_raw(size_t size, int flags)
{
	long r = sys6(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | flags, -1, 0);
	return r == -1 ? NULL : (void *)r;
}

void *hz_os_map(size_t size, size_t align)
{
	if ((align & (align - 1)) || align < hz_page_size) {
		errno = EINVAL;
		return NULL;
	}
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

void *hz_os_map_hugetlb(size_t size, size_t align)
{
	/* An aligned hole found with an ordinary mapping, then the hugetlb
	 * mapping put there without replacing anything (another thread may
	 * have mapped the hole meanwhile: then this fails). No
	 * MAP_NORESERVE: the pages are reserved now, so a short pool fails
	 * here rather than with SIGBUS at the first touch. */
	unsigned char *hole = hz_os_map(size, align);
	if (!hole)
		return NULL;
	hz_os_unmap(hole, size);
	long r = sys6(SYS_mmap, (long)hole, (long)size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB | MAP_FIXED_NOREPLACE,
		      -1, 0);
	if (r == -1)
		return NULL;
	if ((unsigned char *)r != hole) { /* kernels before 4.17 take it as a hint */
		hz_os_unmap((void *)r, size);
		return NULL;
	}
	return hole;
}

int hz_os_unmap(void *p, size_t size)
{
	int saved = errno;
	return (int)ret(syscall(SYS_munmap, p, size), saved);
}

int hz_os_hugepage(void *p, size_t size)
{
	int saved = errno;
	return (int)ret(syscall(SYS_madvise, p, size, MADV_HUGEPAGE), saved);
}

int hz_os_dontneed(void *p, size_t size)
{
	int saved = errno;
	return (int)ret(syscall(SYS_madvise, p, size, MADV_DONTNEED), saved);
}

void *hz_os_remap(void *p, size_t old_size, size_t new_size, void *dst)
{
	long r = dst ? syscall(SYS_mremap, p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst)
		     : syscall(SYS_mremap, p, old_size, new_size, MREMAP_MAYMOVE);
	return r == -1 ? NULL : (void *)r;
}

/* Batched release state: the pidfd and the pid it was opened for, packed
 * in one word so a thread never pairs one process's pid with another's fd
 * (a forked child must not advise its parent); and whether
 * process_madvise works here. */
static uint64_t batch_fd_pid; /* pid << 32 | fd, 0 when none */
static int batch_state = -1;  /* -1 unknown, 1 works, 0 refused */

int hz_os_batch_state(void)
{
	return __atomic_load_n(&batch_state, __ATOMIC_RELAXED);
}

void hz_os_batch_reset(void)
{
	__atomic_store_n(&batch_state, -1, __ATOMIC_RELAXED);
}

/* The pidfd of this process, opened once per process (again when stale is
 * the fd found unusable); -errno on failure. */
static int self_pidfd(int stale)
{
	uint64_t pid = (uint64_t)syscall(SYS_getpid);
	uint64_t cur = __atomic_load_n(&batch_fd_pid, __ATOMIC_ACQUIRE);
	if (cur && (cur >> 32) == pid && (int)(uint32_t)cur != stale)
		return (int)(uint32_t)cur;
	long fd = syscall(SYS_pidfd_open, (long)pid, 0);
	if (fd < 0)
		return -errno;
	uint64_t mine = pid << 32 | (uint32_t)fd;
	if (__atomic_compare_exchange_n(&batch_fd_pid, &cur, mine, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return (int)fd; /* a stale fd stays open: another thread may use it */
	syscall(SYS_close, fd); /* another thread won; use its fd if it is ours */
	return (cur >> 32) == pid ? (int)(uint32_t)cur : -EAGAIN;
}

/* One process_madvise of ranges r[0..k); returns how many whole ranges it
 * released (their bytes added to *bytes), or -errno. */
static long advise_batch(int fd, const struct hz_range *r, size_t k, size_t *bytes)
{
	struct iovec iov[HZ_RELEASE_BATCH];
	for (size_t j = 0; j < k; j++)
		iov[j] = (struct iovec){r[j].p, r[j].len};
	long done = syscall(SYS_process_madvise, fd, iov, k, MADV_DONTNEED, 0);
	if (done < 0)
		return -errno;
	/* The kernel stops at the first range it cannot advise: count only
	 * the whole ranges before it. */
	size_t j = 0, sum = 0;
	while (j < k && sum + r[j].len <= (size_t)done)
		sum += r[j++].len;
	*bytes += sum;
	return (long)j;
}

void hz_os_release_batch(const struct hz_range *r, size_t n, struct hz_release_result *out)
{
	int saved = errno; /* a release inside free must not change errno */
	*out = (struct hz_release_result){0};
	size_t i = 0;
	int state = hz_os_batch_state();
	if (state != 0) {
		int fd = self_pidfd(-1), retried = 0;
		while (fd >= 0 && i < n) {
			size_t k = n - i < HZ_RELEASE_BATCH ? n - i : HZ_RELEASE_BATCH;
			long got = advise_batch(fd, r + i, k, &out->bytes);
			out->syscalls++;
			if (got == -EBADF && !retried) {
				/* The program closed our fd (daemons close them all). */
				fd = self_pidfd(fd);
				retried = 1;
				continue;
			}
			if (got < 0) {
				/* Refused before it ever worked: old kernel (EINVAL,
				 * ENOSYS) or a filter (EPERM). Otherwise this batch
				 * goes range by range, and batching stays on. */
				if (state != 1 && (got == -ENOSYS || got == -EINVAL || got == -EPERM ||
						   got == -EBADF)) {
					__atomic_store_n(&batch_state, 0, __ATOMIC_RELAXED);
					out->fallbacks = 1;
				}
				break;
			}
			__atomic_store_n(&batch_state, 1, __ATOMIC_RELAXED);
			state = 1;
			out->ranges += (size_t)got;
			i += (size_t)got;
			if ((size_t)got < k)
				break; /* the rest of it, range by range */
		}
	} else {
		out->fallbacks = 1;
	}
	/* Range by range: after a refusal, and what a batch left undone. A
	 * failed range sets error: the caller must not count any as zero. */
	for (; i < n; i++) {
		int e = hz_os_dontneed(r[i].p, r[i].len);
		out->syscalls++;
		if (e) {
			if (!out->error)
				out->error = -e;
			continue;
		}
		out->ranges++;
		out->bytes += r[i].len;
	}
	errno = saved;
}
