/* allocator/prim.h: the OS primitives the allocator uses, one contract per
 * function. Linux only for now (prim_linux.c). Every call is a raw
 * syscall: an interposed libc wrapper can never recurse into the
 * allocator, and nothing here allocates or takes a lock. */
#ifndef HZ_PRIM_H
#define HZ_PRIM_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/arch.h"

#define HZ_HUGE_SIZE ((size_t)2 << 20) /* a transparent huge page, x86-64 and arm64 4K */

/* Maps size bytes (a multiple of the page size) of fresh, zeroed,
 * read-write anonymous memory aligned to align (a power of two, at least
 * the page size). Returns NULL with errno ENOMEM on failure (EINVAL for a
 * bad alignment). */
HZ_HIDDEN void *hz_os_map(size_t size, size_t align);
/* Maps size bytes (a multiple of HZ_HUGE_SIZE) backed by hugetlb pages of
 * HZ_HUGE_SIZE, aligned to align, reserved from the pool at once; NULL
 * when the pool cannot give them (the caller falls back and counts it).
 * errno is left as it was. */
HZ_HIDDEN void *hz_os_map_hugetlb(size_t size, size_t align);
/* Unmaps [p, p+size). Returns 0 or -errno. */
HZ_HIDDEN int hz_os_unmap(void *p, size_t size);
/* Asks for transparent huge pages on [p, p+size) (MADV_HUGEPAGE); 0 or
 * -errno (EINVAL when THP is not built in). */
HZ_HIDDEN int hz_os_hugepage(void *p, size_t size);
/* Releases [p, p+size) (MADV_DONTNEED): the range reads as zero after. */
HZ_HIDDEN int hz_os_dontneed(void *p, size_t size);
/* Moves or grows a mapping without copying bytes (mremap MAYMOVE, or at
 * fixed address dst when dst is not NULL). NULL on failure. */
HZ_HIDDEN void *hz_os_remap(void *p, size_t old_size, size_t new_size, void *dst);

struct hz_range {
	void *p;
	size_t len;
};

/* Ranges per process_madvise call: within IOV_MAX (1024), and the iovec
 * array (8 KiB) stays on the stack. */
#define HZ_RELEASE_BATCH 512

/* What one batched release did, for the counters. */
struct hz_release_result {
	size_t ranges, bytes;
	unsigned syscalls;
	unsigned fallbacks; /* 1 when this batch fell back to per-range madvise */
	int error;          /* 0, or the errno of the first range that failed */
};

/* Releases n ranges with MADV_DONTNEED in as few syscalls as the kernel
 * allows: process_madvise(pidfd of this process, iov of at most
 * HZ_RELEASE_BATCH ranges) per batch (Linux 6.13 and later take
 * MADV_DONTNEED there). When process_madvise is refused before it ever
 * worked (ENOSYS, EINVAL, EPERM, EBADF: an older kernel or a seccomp
 * filter) it releases range by range with madvise, remembers that for the
 * life of the process, and says so in the result. What a batch leaves
 * undone is released range by range. out->error is 0 only when every
 * range was released. Safe after fork: the child opens its own pidfd.
 * errno is left as it was. */
HZ_HIDDEN void hz_os_release_batch(const struct hz_range *r, size_t n,
				   struct hz_release_result *out);
/* Whether batched release works here: 1 yes, 0 it fell back, -1 unknown. */
HZ_HIDDEN int hz_os_batch_state(void);
/* Forgets what was learnt of process_madvise (tests). */
HZ_HIDDEN void hz_os_batch_reset(void);

#endif
