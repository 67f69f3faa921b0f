/* The OS contract on Linux (os.h): the page size, memory by raw system
 * call, and the batched release. errno is saved and restored around each call. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mman.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <unistd.h>

#include "linux.h"
#include "os.h"

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif

size_t hz_page_size = 4096;

void hz_os_init(void)
{
	size_t ps = getauxval(AT_PAGESZ);
	if (ps >= 4096 && !(ps & (ps - 1)))
		hz_page_size = ps;
}

static long map_raw(void *at, size_t size, int flags)
{
	return syscall(SYS_mmap, at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags,
		       -1, 0);
}

int hz_os_unmap(void *p, size_t size)
{
	int saved = errno;
	return hz_os_status(syscall(SYS_munmap, p, size), saved);
}

int hz_os_writable(void *p, size_t size)
{
	int saved = errno;
	return hz_os_status(syscall(SYS_mprotect, p, size, PROT_READ | PROT_WRITE), saved);
}

int hz_os_map(size_t size, size_t align, void **out)
{
	if ((align & (align - 1)) || align < hz_page_size)
		return EINVAL;
	if (size == 0 || size > SIZE_MAX - align)
		return ENOMEM;
	/* Over-map by the alignment and trim both ends: one extra syscall or
	 * two only when the kernel's placement is not aligned already. */
	size_t ps = hz_page_size;
	size_t extra = align > ps ? align - ps : 0;
	int saved = errno;
	long r = map_raw(NULL, size + extra, MAP_NORESERVE);
	if (hz_os_status(r, saved))
		return ENOMEM;
	uintptr_t m = (uintptr_t)r, a = (m + align - 1) & ~(uintptr_t)(align - 1);
	size_t head = a - m, tail = extra - head;
	if (head)
		hz_os_unmap((void *)m, head);
	if (tail)
		hz_os_unmap((void *)(a + size), tail);
	*out = (void *)a;
	return 0;
}

int hz_os_map_hugetlb(size_t size, size_t align, void **out)
{
	/* An aligned hole found with an ordinary mapping, then the hugetlb
	 * mapping put there (another thread may have mapped the hole
	 * meanwhile: then this fails). */
	void *hole;
	int e = hz_os_map(size, align, &hole);
	if (e)
		return e;
	hz_os_unmap(hole, size);
	if (hz_os_map_at(hole, size, 1))
		return ENOMEM;
	*out = hole;
	return 0;
}

int hz_os_map_at(void *at, size_t size, int hugetlb)
{
	/* No MAP_NORESERVE for hugetlb: its pages are reserved now, so a
	 * short pool fails here rather than with SIGBUS at the first touch. */
	int flags = MAP_FIXED_NOREPLACE | (hugetlb ? MAP_HUGETLB | MAP_HUGE_2MB : MAP_NORESERVE);
	int saved = errno;
	long r = map_raw(at, size, flags);
	int e = hz_os_status(r, saved);
	if (e)
		return e == EEXIST ? EEXIST : ENOMEM;
	if ((void *)r != at) { /* kernels before 4.17 take it as a hint */
		hz_os_unmap((void *)r, size);
		return EEXIST;
	}
	return 0;
}

int hz_os_hugepage(void *p, size_t size)
{
	int saved = errno;
	return hz_os_status(syscall(SYS_madvise, p, size, MADV_HUGEPAGE), saved);
}

int hz_os_nohugepage(void *p, size_t size)
{
	int saved = errno;
	return hz_os_status(syscall(SYS_madvise, p, size, MADV_NOHUGEPAGE), saved);
}


int hz_os_swap_possible(void)
{
	struct sysinfo si;
	int saved = errno;
	long r = syscall(SYS_sysinfo, &si);
	errno = saved;
	return r != 0 || si.totalswap != 0;
}

int hz_os_residency(const void *p, size_t n, unsigned char *v)
{
	int saved = errno;
	return hz_os_status(syscall(SYS_mincore, p, n * hz_page_size, v), saved);
}

int hz_os_resident(const void *p)
{
	unsigned char v = 0;
	return !hz_os_residency(p, 1, &v) && (v & 1);
}

int hz_os_count_resident(const void *p, size_t n, size_t *resident)
{
	unsigned char v[1024];
	*resident = 0;
	for (size_t i = 0; i < n; i += sizeof v) {
		size_t m = n - i < sizeof v ? n - i : sizeof v;
		int e = hz_os_residency((const char *)p + i * hz_page_size, m, v);
		if (e)
			return e;
		for (size_t k = 0; k < m; k++)
			*resident += v[k] & 1;
	}
	return 0;
}

int hz_os_mapped(const void *p)
{
	unsigned char v = 0;
	int saved = errno;
	void *page = (void *)((uintptr_t)p & ~(uintptr_t)(hz_page_size - 1));
	return hz_os_status(syscall(SYS_mincore, page, hz_page_size, &v), saved) != ENOMEM;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int hz_os_populate(void *p, size_t size)
{
	int saved = errno;
	return hz_os_status(syscall(SYS_madvise, p, size, MADV_POPULATE_WRITE), saved);
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

/* Whether the kernel has the guard advice (Linux 6.13): 0 not yet
 * known, 1 it has, -1 it has not (every guard is mprotect's then).
 * Learnt at the first refused install, never on the common path. */
static int guard_advice;
/* Guards installed by mprotect(PROT_NONE), ever: where a mapping refused
 * the advice (VM_LOCKED after mlockall(MCL_FUTURE), hugetlb) or the
 * kernel lacks it. Counted before the mprotect: the thread that frees
 * the block later sees it. While 0, a removal is the advice alone. */
static unsigned long prot_guards;

/* After MADV_GUARD_INSTALL's EINVAL: learns once whether the kernel
 * knows the advice at all. A madvise of no bytes checks the advice and
 * nothing else: 0 where it is known, EINVAL where not. p page-aligned. */
static void learn_guard_advice(void *p, int saved)
{
	if (__atomic_load_n(&guard_advice, __ATOMIC_RELAXED))
		return;
	int e = hz_os_status(syscall(SYS_madvise, p, 0, MADV_GUARD_INSTALL), saved);
	__atomic_store_n(&guard_advice, e ? -1 : 1, __ATOMIC_RELAXED);
}

int hz_os_guard(void *p, size_t size, int on)
{
	int saved = errno;
	int advice = __atomic_load_n(&guard_advice, __ATOMIC_RELAXED) >= 0;
	if (on) {
		if (advice) {
			int e = hz_os_status(syscall(SYS_madvise, p, size, MADV_GUARD_INSTALL), saved);
			if (e != EINVAL)
				return e;
			/* This mapping refuses it, or the kernel has no such
			 * advice: this guard is mprotect's. */
			learn_guard_advice(p, saved);
		}
		__atomic_fetch_add(&prot_guards, 1, __ATOMIC_RELAXED);
		return hz_os_status(syscall(SYS_mprotect, p, size, PROT_NONE), saved);
	}
	/* Removed whichever way it was installed: the advice's marker (which
	 * mprotect leaves in place), and PROT_NONE once any guard was made so. */
	int e = advice ? hz_os_status(syscall(SYS_madvise, p, size, MADV_GUARD_REMOVE), saved) : 0;
	if (!__atomic_load_n(&prot_guards, __ATOMIC_RELAXED))
		return e;
	int m = hz_os_status(syscall(SYS_mprotect, p, size, PROT_READ | PROT_WRITE), saved);
	return m ? m : e == EINVAL ? 0 : e; /* EINVAL: a mapping that takes no marker holds none */
}

int hz_os_pages_exclusive(const void *p, size_t n, uint64_t out[8])
{
	uint64_t e[512];
	int saved = errno;
	for (int w = 0; w < 8; w++)
		out[w] = 0;
	if (n > 512)
		return EINVAL;
	/* Opened each time: /proc/self is the opener's, and a forked child
	 * must read its own. */
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hz_os_status(-1, saved);
	off_t at = (off_t)((uintptr_t)p / hz_page_size * sizeof e[0]);
	ssize_t r = pread(fd, e, n * sizeof e[0], at);
	int err = r == (ssize_t)(n * sizeof e[0]) ? 0 : r < 0 ? errno : EIO;
	close(fd);
	errno = saved;
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if ((e[i] >> 63 & 1) && (e[i] >> 56 & 1)) /* present, exclusively mapped */
			out[i / 64] |= 1ull << (i % 64);
	return 0;
}

int hz_os_dontneed(void *p, size_t size)
{
	int saved = errno;
	return hz_os_status(syscall(SYS_madvise, p, size, MADV_DONTNEED), saved);
}

int hz_os_advise(void *p, size_t size, int advice)
{
	int saved = errno;
	return hz_os_status(syscall(SYS_madvise, p, size, advice), saved);
}

int hz_os_remap(void *p, size_t old_size, size_t new_size, void *dst, void **out)
{
	int saved = errno;
	long r = dst ? syscall(SYS_mremap, p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst)
		     : syscall(SYS_mremap, p, old_size, new_size, MREMAP_MAYMOVE);
	int e = hz_os_status(r, saved);
	if (!e)
		*out = (void *)r;
	return e;
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
 * the fd found unusable); -errno on failure. errno is the caller's to
 * restore. */
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
	int saved = errno;
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
				out->error = e;
			continue;
		}
		out->ranges++;
		out->bytes += r[i].len;
	}
	errno = saved;
}
