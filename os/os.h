/* os/os.h: the library's one contract with the operating system, the
 * floor every room stands on (arch/, obs/, allocator/, preload/): memory,
 * page size, clock, threads, environment, stderr and small files. Linux is
 * the one implementation (linux_memory.c, linux_system.c); nothing else in
 * the library makes a system call or reads the environment.
 *
 * Errors, one convention: a function that can fail returns 0, or the
 * errno value that describes the failure (a positive number), and gives
 * its results through out parameters. No function here changes errno,
 * allocates, or takes a lock. The memory calls are raw system calls, so
 * that an interposed libc wrapper can never call back into the allocator
 * while it holds a lock. */
#ifndef HZ_OS_H
#define HZ_OS_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define HZ_HUGE_SIZE ((size_t)2 << 20) /* a transparent huge page, x86-64 and arm64 4K */

/* ---- start ---- */

/* The system's page size: 4096 until hz_os_init has run. */
extern size_t hz_page_size;
/* Reads the page size the process was started with. Idempotent; safe
 * before any constructor and from inside malloc. */
void hz_os_init(void);
/* 64 random bits for address-space layout, from getrandom(2) without
 * blocking; where it cannot give them (early boot, seccomp), the kernel's
 * own placement of a mapping mixed with the clock. Never AT_RANDOM's
 * bytes: glibc makes its stack canary and pointer guard of them, which a
 * leaked arena address must not reveal. */
uint64_t hz_os_random64(void);
/* x's bits spread over all 64 (splitmix64's finaliser, a bijection): the
 * fallback above mixes with it; a draw from a seed takes nearby seeds (1,
 * 2, 3) to unrelated values. */
static inline uint64_t hz_os_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* ---- memory ---- */

/* Maps size bytes (a multiple of the page size) of fresh, zeroed,
 * read-write anonymous memory aligned to align (a power of two, at least
 * the page size) at *out. EINVAL for a bad alignment, ENOMEM. */
int hz_os_map(size_t size, size_t align, void **out);
/* The same backed by hugetlb pages of HZ_HUGE_SIZE (size a multiple of
 * it), reserved from the pool at once: ENOMEM when the pool cannot give
 * them (the caller falls back and counts it). */
int hz_os_map_hugetlb(size_t size, size_t align, void **out);
/* Maps size bytes at exactly at (aligned to the page size), replacing
 * nothing: 0; EEXIST when anything is mapped there; ENOMEM otherwise (out
 * of memory, past the address space, or a short hugetlb pool). hugetlb
 * as hz_os_map_hugetlb. */
int hz_os_map_at(void *at, size_t size, int hugetlb);
/* Unmaps [p, p+size). */
int hz_os_unmap(void *p, size_t size);
/* Makes [p, p+size) (whole pages of a private mapping) readable and
 * writable: 0, or an errno (ENOMEM where the commit limit refuses it). */
int hz_os_writable(void *p, size_t size);
/* Asks for transparent huge pages on [p, p+size) (MADV_HUGEPAGE); EINVAL
 * when THP is not built in. */
int hz_os_hugepage(void *p, size_t size);
/* Asks for small pages only there (MADV_NOHUGEPAGE), whatever the
 * system's THP mode. */
int hz_os_nohugepage(void *p, size_t size);
/* Whether the page at p (page-aligned) is in memory (mincore); 0 on error. */
int hz_os_resident(const void *p);
/* How many of the n pages from p (page-aligned) are in memory (mincore,
 * a window at a time): 0 and *resident, or an errno (ENOMEM where part
 * of the range is not mapped). */
int hz_os_count_resident(const void *p, size_t n, size_t *resident);
/* Residency of the n pages from p (page-aligned), one byte per page in
 * v, bit 0 set where the page is in memory (one mincore): 0, or an
 * errno. */
int hz_os_residency(const void *p, size_t n, unsigned char *v);
/* Whether anonymous memory may be swapped out (swap configured; 1 when
 * that cannot be learnt): then a page not in memory may hold data. */
int hz_os_swap_possible(void);
/* Whether the page at p is mapped at all (mincore's ENOMEM says it is
 * not); 1 when it cannot tell. */
int hz_os_mapped(const void *p);
/* Faults [p, p+size) in as for a write, leaving every byte as it is
 * (MADV_POPULATE_WRITE): a page already in memory is untouched, so it is
 * safe while another thread writes there. EINVAL before Linux 5.14. */
int hz_os_populate(void *p, size_t size);
/* Makes [p, p+size) (whole pages) a guard region where on, where any
 * access faults, and ordinary memory again otherwise, reading zero.
 * A guard is MADV_GUARD_INSTALL's marker, which neither splits the
 * mapping nor needs memory; PROT_NONE for this call alone where the
 * mapping refuses the advice (VM_LOCKED after mlockall(MCL_FUTURE),
 * hugetlb), and for every call where the kernel lacks it (before Linux
 * 6.13). A removal undoes either: MADV_GUARD_REMOVE, and mprotect too
 * once any guard of the process was PROT_NONE's, so no guard is left in
 * memory handed out again. One system call each way while no guard fell
 * back. 0 or an errno. */
int hz_os_guard(void *p, size_t size, int on);
/* Which of the n pages from p (page-aligned, n <= 512) are in memory and
 * mapped by this process alone (/proc/self/pagemap's present and
 * exclusive bits): bit i of out[i / 64]. After a fork, a page still
 * shared copy-on-write with the other process is not. */
int hz_os_pages_exclusive(const void *p, size_t n, uint64_t out[8]);
/* Releases [p, p+size) (MADV_DONTNEED): the range reads as zero after. */
int hz_os_dontneed(void *p, size_t size);
/* madvise(p, size, advice) as asked, for the embedded jemalloc's own
 * advice: 0, or the errno (errno itself untouched). */
int hz_os_advise(void *p, size_t size, int advice);
/* Moves or grows a mapping without copying bytes (mremap MAYMOVE, or to
 * the fixed address dst when dst is not NULL); the new place at *out. */
int hz_os_remap(void *p, size_t old_size, size_t new_size, void *dst, void **out);

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
 * range was released. Safe after fork: the child opens its own pidfd. */
void hz_os_release_batch(const struct hz_range *r, size_t n, struct hz_release_result *out);
/* Whether batched release works here: 1 yes, 0 it fell back, -1 unknown. */
int hz_os_batch_state(void);
/* Forgets what was learnt of process_madvise (tests). */
void hz_os_batch_reset(void);

/* ---- limits ---- */

/* The machine's memory and swap, in bytes (sysinfo(2): no file needed);
 * 0 and 0 when refused. */
void hz_os_memory(size_t *ram, size_t *swap);
/* The soft RLIMIT_AS and RLIMIT_DATA, SIZE_MAX where unlimited. */
void hz_os_address_limits(size_t *as, size_t *data);

/* ---- clock ---- */

/* CLOCK_MONOTONIC, in nanoseconds. */
uint64_t hz_os_now_ns(void);
/* CLOCK_MONOTONIC_COARSE, in nanoseconds: the kernel's last tick (a few
 * ms behind), read without the time-stamp counter, several times cheaper
 * on a virtual machine's clock: for windows of milliseconds and more
 * read on every large block (the dirty decay, the limits' checks). Only
 * compared with itself. */
uint64_t hz_os_coarse_ns(void);
/* From now on the clocks are the coarse ones (the kernel's last tick, a
 * few ms), which read no time-stamp counter: for a process whose threads
 * may have it turned off (PR_SET_TSC, strict seccomp), where reading it
 * kills the thread. Still no system call. */
void hz_os_clock_by_call(void);
/* CLOCK_REALTIME, in nanoseconds (a seed that differs between runs). */
uint64_t hz_os_realtime_ns(void);
/* Sleeps ms milliseconds, resumed across signals. */
void hz_os_sleep_ms(uint64_t ms);
/* Lets another thread run (a short wait's turn). */
void hz_os_yield(void);
/* Sleeps us microseconds, resumed across signals. */
void hz_os_sleep_us(uint64_t us);
/* The CPUs the calling thread may run on (sched_getaffinity); 1 when
 * that cannot be read. */
unsigned hz_os_cpus(void);
/* Thread cancellation off for the calling thread (a wait that must not
 * be left half way), and back: hz_os_cancel_off returns the state that
 * hz_os_cancel_restore puts back. */
int hz_os_cancel_off(void);
void hz_os_cancel_restore(int old);
/* The threads of the whole system running or ready to run now, the
 * caller among them (/proc/loadavg's fourth field): 0 and *n, or an errno
 * (no /proc). */
int hz_os_runnable(unsigned *n);

/* Addresses of the main thread's stack that no mapping of the heap
 * shares, [*lo, *hi): from the top of the stack the program started on,
 * down by its RLIMIT_STACK, at most 128 MiB. In the kernel's default
 * layout the mappings it places stay below the stack's reach (its limit,
 * at least 128 MiB, a guard gap and a random pad); in the legacy layout
 * (an unlimited stack) they start far below. Only a mapping fixed there
 * by the program could overlap. *lo == *hi when not known. Reads no
 * file and takes no lock. */
void hz_os_main_stack(uintptr_t *lo, uintptr_t *hi);

/* The calling thread's CPU time, in nanoseconds. */
uint64_t hz_os_thread_cpu_ns(void);
/* Page faults served without I/O so far (getrusage's ru_minflt): the
 * whole process's into *process, the calling thread's into *thread. 0, or
 * the errno of the refusal (a seccomp filter). */
int hz_os_minor_faults(uint64_t *process, uint64_t *thread);
/* The whole process's page faults served without I/O and its CPU time,
 * user and system, in nanoseconds, every thread's (getrusage RUSAGE_SELF,
 * so counted from the fork that made the process, across its exec): 0,
 * or the errno of the refusal. */
int hz_os_usage(uint64_t *minor_faults, uint64_t *cpu_ns);
/* The process's resident bytes now and at most so far (/proc/self/status:
 * VmRSS and VmHWM, the high-water mark of this program's own address
 * space; not getrusage's ru_maxrss, which carries the peak of whatever
 * process exec'd it, and not reset by /proc/PID/clear_refs as VmHWM is):
 * 0, or an errno (no /proc, no fd left, a filter). */
int hz_os_footprint(size_t *rss, size_t *peak);

/* ---- threads ---- */

/* Every running thread of the process passes a full memory barrier
 * before this returns (membarrier, private expedited, else global): a
 * store made before the call is seen by each thread's loads after it,
 * whatever order its CPU loads in. 0, or the errno value (a kernel
 * without membarrier, a seccomp filter). */
int hz_os_barrier_threads(void);
/* Starts fn(arg) on a new detached thread with every signal blocked (it
 * never takes a signal meant for the program) and a 256 KiB stack. Made
 * by pthread_create, which allocates a little (the thread's TLS) through
 * malloc: called with no lock of the library held. */
int hz_os_thread_start(void *(*fn)(void *), void *arg);
/* The scheduling a background thread can lower itself to. */
enum hz_sched { HZ_SCHED_NORMAL, HZ_SCHED_NICE19, HZ_SCHED_IDLE };
/* Lowers the calling thread to SCHED_IDLE, or where that is refused
 * (seccomp) to nice 19, or leaves it: what it got. */
enum hz_sched hz_os_sched_background(void);
/* What a new thread would get from hz_os_sched_background, asked on a
 * short-lived thread of its own (the caller's scheduling is never
 * changed: leaving SCHED_IDLE needs a privilege); -1 when no thread
 * could be made. */
int hz_os_sched_background_probe(void);
/* The calling thread's id (gettid). */
int hz_os_thread_id(void);
/* Raises thread tid of this process back to SCHED_OTHER at nice 0: 0 on
 * success, else -1 (leaving SCHED_IDLE or nice 19 needs CAP_SYS_NICE or
 * an RLIMIT_NICE of 20). */
int hz_os_sched_normal(int tid);
/* The calling thread's seccomp mode (/proc/self/status): 0 none, 1
 * strict, 2 a filter; -1 when it cannot be read. A new thread inherits
 * it. */
int hz_os_seccomp_mode(void);
/* Raises thread tid of this process to the calling thread's scheduling:
 * its real-time policy and priority (SCHED_FIFO, SCHED_RR), else
 * SCHED_OTHER at nice 0 as hz_os_sched_normal. 0, or -1 where that is
 * not permitted (CAP_SYS_NICE, RLIMIT_RTPRIO, RLIMIT_NICE). */
int hz_os_sched_inherit(int tid);

/* ---- environment ---- */

/* The value of the environment variable name, or NULL when it is unset
 * or the program runs setuid or setgid (its environment belongs to
 * another user). Never allocates. */
const char *hz_os_getenv(const char *name);
int hz_os_pid(void);
/* The current directory into buf (cap bytes, NUL-terminated). */
int hz_os_cwd(char *buf, size_t cap);

/* ---- stderr and files ---- */

/* Writes "hugezero: " a b c and a newline to stderr (any may be NULL). */
void hz_os_log(const char *a, const char *b, const char *c);
/* Writes all n bytes at buf to fd, across short writes and signals. */
int hz_os_write_all(int fd, const void *buf, size_t n);
/* 1 where path names a file of any kind (a dangling symlink too), or
 * where that cannot be learnt (lstat failed otherwise than ENOENT or
 * ENOTDIR); 0 where it names nothing. */
int hz_os_path_present(const char *path);
/* Reads the file at path (a small one: /proc, /sys) into buf, at most
 * cap - 1 bytes, NUL-terminated; *len gets the bytes read. */
int hz_os_read_file(const char *path, char *buf, size_t cap, size_t *len);

/* ---- the machine ---- */

/* 1 when the kernel reports free memory to its hypervisor, which may
 * discard it (a virtio balloon with free page reporting,
 * VIRTIO_BALLOON_F_REPORTING): memory taken from the free lists may then
 * have to be backed again by the host at its first touch. 0 otherwise. */
int hz_os_free_page_reporting(void);
/* Opens path for writing a file at *fd, with mode exactly (0600 private,
 * 0644 for a reader of another user; the umask does not apply, unless
 * the file system refuses the change); a symlink at path
 * is never followed; an existing file is taken only if it is a regular
 * file this user owns, and is truncated. EEXIST and the like when it is
 * refused. */
int hz_os_create_file(const char *path, unsigned mode, int *fd);
/* rename(2) and unlink(2): 0, or the errno value. */
int hz_os_rename(const char *from, const char *to);
int hz_os_unlink(const char *path);
/* A directory's entries but . and .., read with getdents64 into the
 * caller's buffer (never allocates): open (0, or the errno value), next
 * until it returns NULL (the end, or an error reading: d->error), close. */
struct hz_os_dir {
	int fd, error;
	long len, at;
	char buf[4096] __attribute__((aligned(8)));
};
int hz_os_dir_open(struct hz_os_dir *d, const char *dir);
const char *hz_os_dir_next(struct hz_os_dir *d);
void hz_os_dir_close(struct hz_os_dir *d);
/* The last modification of the file at path (not followed if a symlink),
 * in CLOCK_REALTIME ns, into *ns: 0, or the errno value. */
int hz_os_mtime_ns(const char *path, uint64_t *ns);
/* 0 when no process pid exists in this PID namespace, 1 otherwise (one of
 * another user counts as existing). */
int hz_os_pid_exists(int pid);
void hz_os_close(int fd);

#pragma GCC visibility pop

#endif
