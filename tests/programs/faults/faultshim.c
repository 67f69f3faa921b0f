/* Fault injection for allocators: preloaded before the allocator
 * (LD_PRELOAD=libfaultshim.so:ALLOCATOR.so), it takes the calls an
 * allocator makes to the OS through libc's dynamic symbols and fails some
 * of them, at random, with the errno the kernel or libc gives when it is
 * short of something:
 *
 *   mmap, mmap64, mremap, syscall(SYS_mmap | SYS_mremap)      ENOMEM
 *   madvise, syscall(SYS_madvise)                              ENOMEM, EAGAIN
 *       (MADV_DONTNEED only ENOMEM: its memory then stays as it was, and
 *        the caller must count it dirty)
 *   process_madvise, syscall(SYS_process_madvise)              ENOMEM, EPERM
 *   pidfd_open, syscall(SYS_pidfd_open)                        EMFILE
 *   open, open64, openat, openat64, __open_2 & co.,
 *       syscall(SYS_open | SYS_openat)                         EMFILE
 *   pthread_create                                             EAGAIN
 *   sched_setscheduler, syscall(SYS_sched_setscheduler)        EPERM
 *   getrandom (GRND_NONBLOCK), syscall(SYS_getrandom)          EAGAIN
 *   syscall(SYS_mprotect)                                      ENOMEM
 *   sbrk (growing; tcmalloc's heap, jemalloc's dss)            ENOMEM
 *
 * munmap is never failed (no allocator can do anything about it, and the
 * kernel fails it only for a bad argument or the map count); calls made
 * inside libc (its own malloc's __mmap, ld.so's) do not reach the shim.
 *
 * Environment, read at the first intercepted call:
 *   FAULT_SEED     the seed (default 1)
 *   FAULT_RATE     faults per mille of the calls eligible (default 0: none)
 *   FAULT_AFTER    no fault before this many intercepted calls (default 0)
 *   FAULT_ARM      1: no fault until the program calls faultshim_arm()
 *                  (the workload does once each of its threads has made a
 *                  first allocation: see faults.sh on jemalloc's arenas)
 *   FAULT_KINDS    comma-separated kinds to fail (default all): mmap,
 *                  mremap, madvise, dontneed, process_madvise, pidfd_open,
 *                  open, pthread_create, sched, getrandom, sbrk, mprotect
 *   FAULT_VERBOSE  1: at exit, one line on stderr with the calls and the
 *                  faults of each kind ("faultshim: pid N calls C faults F:
 *                  kind calls/faults ..."); 2: also a line at each fault,
 *                  with its call number and caller ("faultshim: fault N
 *                  kind from ADDR OBJECT+OFFSET SYMBOL+OFFSET", found by
 *                  dladdr, which takes ld.so's lock: not signal-safe)
 *
 * The decision for the n-th intercepted call (one process-wide atomic
 * counter) is a hash of the seed and n, so it needs no lock and no
 * per-thread state, and a single-threaded run repeats exactly. Every call
 * is forwarded by its own system call instruction, never through libc or
 * dlsym, except pthread_create (resolved in a constructor, or at its first
 * call) and sbrk (libc's __sbrk, which keeps libc's idea of the break).
 * The shim never allocates, takes no lock and is async-signal-safe. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mman.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- raw system calls ---- */

static long raw6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	ret = x0;
#else
#error "faultshim: no raw system call for this architecture"
#endif
	return ret;
}

/* The kernel's -errno as libc returns it: -1 and errno. */
static long ret_errno(long r)
{
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* ---- kinds and counters ---- */

enum kind {
	K_MMAP,
	K_MREMAP,
	K_MADVISE,
	K_DONTNEED,
	K_PMADVISE,
	K_PIDFD,
	K_OPEN,
	K_THREAD,
	K_SCHED,
	K_RANDOM,
	K_SBRK,
	K_MPROTECT,
	K_N
};
static const char *const kind_name[K_N] = {
	"mmap", "mremap", "madvise", "dontneed", "process_madvise", "pidfd_open",
	"open", "pthread_create", "sched", "getrandom", "sbrk", "mprotect"};

static unsigned long n_calls[K_N], n_faults[K_N];
static unsigned long call_seq; /* every intercepted call, all kinds */
static int state;	       /* 0 not read, 1 being read, 2 ready */
static uint64_t seed = 1;
static unsigned rate, kinds = (1u << K_N) - 1, verbose;
static unsigned long after;
static unsigned arm_wait;
static int armed;

/* FAULT_ARM=1: faults from now on. */
__attribute__((visibility("default"))) void faultshim_arm(void)
{
	__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
}

static unsigned long parse_ul(const char *s, unsigned long dflt)
{
	if (!s || *s < '0' || *s > '9')
		return dflt;
	unsigned long v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (unsigned long)(*s++ - '0');
	return v;
}

static int word_is(const char *s, size_t n, const char *w)
{
	size_t i = 0;
	for (; i < n && w[i]; i++)
		if (s[i] != w[i])
			return 0;
	return i == n && !w[i];
}

static void read_env(void)
{
	int expect = 0;
	if (!__atomic_compare_exchange_n(&state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	seed = parse_ul(getenv("FAULT_SEED"), 1);
	rate = (unsigned)parse_ul(getenv("FAULT_RATE"), 0);
	after = parse_ul(getenv("FAULT_AFTER"), 0);
	arm_wait = (unsigned)parse_ul(getenv("FAULT_ARM"), 0);
	verbose = (unsigned)parse_ul(getenv("FAULT_VERBOSE"), 0);
	const char *k = getenv("FAULT_KINDS");
	if (k && *k) {
		kinds = 0;
		while (*k) {
			size_t n = 0;
			while (k[n] && k[n] != ',')
				n++;
			for (int i = 0; i < K_N; i++)
				if (word_is(k, n, kind_name[i]))
					kinds |= 1u << i;
			k += n + (k[n] == ',');
		}
	}
	__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Whether this call fails: 0, or a random word (never 0) whose high bits
 * choose among the errno values of the kind. */
static char *put_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

static char *put_ul(char *p, unsigned long v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_hex(char *p, unsigned long v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = "0123456789abcdef"[v % 16];
	while (v /= 16);
	p = put_str(p, "0x");
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* FAULT_VERBOSE=2: a line for each fault, with the caller. */
static void say_fault(enum kind k, unsigned long n, const void *from)
{
	char buf[512], *p = buf;
	Dl_info info;
	p = put_str(p, "faultshim: fault ");
	p = put_ul(p, n);
	p = put_str(p, " ");
	p = put_str(p, kind_name[k]);
	p = put_str(p, " from ");
	p = put_hex(p, (unsigned long)from);
	if (dladdr(from, &info) && info.dli_fname) {
		const char *f = info.dli_fname, *base = f;
		for (; *f; f++)
			if (*f == '/')
				base = f + 1;
		p = put_str(p, " ");
		for (int i = 0; base[i] && i < 100; i++)
			*p++ = base[i];
		p = put_str(p, "+");
		p = put_hex(p, (unsigned long)from - (unsigned long)info.dli_fbase);
		if (info.dli_sname) {
			p = put_str(p, " ");
			for (int i = 0; info.dli_sname[i] && i < 200; i++)
				*p++ = info.dli_sname[i];
			p = put_str(p, "+");
			p = put_hex(p, (unsigned long)from - (unsigned long)info.dli_saddr);
		}
	}
	*p++ = '\n';
	raw6(SYS_write, 2, (long)buf, p - buf, 0, 0, 0);
}

static uint64_t fault_from(enum kind k, const void *from)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (s != 2) {
		read_env();
		if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2)
			return 0; /* another thread is reading it: not yet */
	}
	__atomic_fetch_add(&n_calls[k], 1, __ATOMIC_RELAXED);
	unsigned long n = __atomic_fetch_add(&call_seq, 1, __ATOMIC_RELAXED);
	if (!rate || n < after || !(kinds >> k & 1) ||
	    (arm_wait && !__atomic_load_n(&armed, __ATOMIC_ACQUIRE)))
		return 0;
	uint64_t r = mix(seed * 0x9e3779b97f4a7c15ull + n);
	if (r % 1000 >= rate)
		return 0;
	__atomic_fetch_add(&n_faults[k], 1, __ATOMIC_RELAXED);
	if (verbose >= 2)
		say_fault(k, n, from);
	return r | 1ull << 63;
}

/* In an exported function, not a helper: its caller is the allocator. */
#define fault(k) fault_from(k, __builtin_return_address(0))

static int pick(uint64_t r, int a, int b)
{
	return (r >> 40) & 1 ? a : b;
}

static enum kind madvise_kind(long advice)
{
	return advice == MADV_DONTNEED ? K_DONTNEED : K_MADVISE;
}

static int madvise_errno(uint64_t r, long advice)
{
	return advice == MADV_DONTNEED ? ENOMEM : pick(r, ENOMEM, EAGAIN);
}

/* ---- the interposed functions ---- */

EXPORT long syscall(long n, ...)
{
	va_list ap;
	va_start(ap, n);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
	uint64_t r;
	int err = 0;
	switch (n) {
	case SYS_mmap:
		if (fault(K_MMAP))
			err = ENOMEM;
		break;
	case SYS_mremap:
		if (fault(K_MREMAP))
			err = ENOMEM;
		break;
	case SYS_madvise:
		if ((r = fault(madvise_kind(c))))
			err = madvise_errno(r, c);
		break;
#ifdef SYS_process_madvise
	case SYS_process_madvise:
		if ((r = fault(K_PMADVISE)))
			err = pick(r, ENOMEM, EPERM);
		break;
#endif
#ifdef SYS_pidfd_open
	case SYS_pidfd_open:
		if (fault(K_PIDFD))
			err = EMFILE;
		break;
#endif
#ifdef SYS_open
	case SYS_open:
#endif
	case SYS_openat:
		if (fault(K_OPEN))
			err = EMFILE;
		break;
	case SYS_sched_setscheduler:
		if (fault(K_SCHED))
			err = EPERM;
		break;
	case SYS_mprotect: /* as a commit limit refuses memory made writable */
		if (fault(K_MPROTECT))
			err = ENOMEM;
		break;
#ifdef SYS_getrandom
	case SYS_getrandom:
		if (fault(K_RANDOM))
			err = EAGAIN;
		break;
#endif
	default:
		break;
	}
	if (err) {
		errno = err;
		return -1;
	}
	return ret_errno(raw6(n, a, b, c, d, e, f));
}

static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off,
		     const void *from)
{
	if (fault_from(K_MMAP, from)) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return (void *)ret_errno(raw6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, (long)off));
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off, __builtin_return_address(0));
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off, __builtin_return_address(0));
}

EXPORT void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...)
{
	void *to = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		to = va_arg(ap, void *);
		va_end(ap);
	}
	if (fault(K_MREMAP)) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return (void *)ret_errno(
		raw6(SYS_mremap, (long)old, (long)old_size, (long)new_size, flags, (long)to, 0));
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	uint64_t r = fault(madvise_kind(advice));
	if (r) {
		errno = madvise_errno(r, advice);
		return -1;
	}
	return (int)ret_errno(raw6(SYS_madvise, (long)addr, (long)len, advice, 0, 0, 0));
}

#ifdef SYS_process_madvise
EXPORT ssize_t process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice,
			       unsigned flags)
{
	uint64_t r = fault(K_PMADVISE);
	if (r) {
		errno = pick(r, ENOMEM, EPERM);
		return -1;
	}
	return ret_errno(raw6(SYS_process_madvise, pidfd, (long)iov, (long)n, advice, flags, 0));
}
#endif

#ifdef SYS_pidfd_open
EXPORT int pidfd_open(pid_t pid, unsigned flags)
{
	if (fault(K_PIDFD)) {
		errno = EMFILE;
		return -1;
	}
	return (int)ret_errno(raw6(SYS_pidfd_open, pid, flags, 0, 0, 0, 0));
}
#endif

EXPORT ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
	/* Only a non-blocking call can fail for want of entropy. */
	if ((flags & GRND_NONBLOCK) && fault(K_RANDOM)) {
		errno = EAGAIN;
		return -1;
	}
	return ret_errno(raw6(SYS_getrandom, (long)buf, (long)len, flags, 0, 0, 0));
}

EXPORT int sched_setscheduler(pid_t pid, int policy, const struct sched_param *sp)
{
	if (fault(K_SCHED)) {
		errno = EPERM;
		return -1;
	}
	return (int)ret_errno(raw6(SYS_sched_setscheduler, pid, policy, (long)sp, 0, 0, 0));
}

static int do_openat(int dirfd, const char *path, int flags, unsigned mode, const void *from)
{
	if (fault_from(K_OPEN, from)) {
		errno = EMFILE;
		return -1;
	}
	return (int)ret_errno(raw6(SYS_openat, dirfd, (long)path, flags, mode, 0, 0));
}

static int wants_mode(int flags)
{
#ifdef O_TMPFILE
	if ((flags & O_TMPFILE) == O_TMPFILE)
		return 1;
#endif
	return (flags & O_CREAT) != 0;
}

#define MODE_ARG(flags, mode)                                                                      \
	unsigned mode = 0;                                                                         \
	if (wants_mode(flags)) {                                                                   \
		va_list ap;                                                                        \
		va_start(ap, flags);                                                               \
		mode = va_arg(ap, unsigned);                                                       \
		va_end(ap);                                                                        \
	}

EXPORT int open(const char *path, int flags, ...)
{
	MODE_ARG(flags, mode)
	return do_openat(AT_FDCWD, path, flags, mode, __builtin_return_address(0));
}

EXPORT int open64(const char *path, int flags, ...)
{
	MODE_ARG(flags, mode)
	return do_openat(AT_FDCWD, path, flags, mode, __builtin_return_address(0));
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	MODE_ARG(flags, mode)
	return do_openat(dirfd, path, flags, mode, __builtin_return_address(0));
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	MODE_ARG(flags, mode)
	return do_openat(dirfd, path, flags, mode, __builtin_return_address(0));
}

EXPORT int __open_2(const char *path, int flags)
{
	return do_openat(AT_FDCWD, path, flags, 0, __builtin_return_address(0));
}

EXPORT int __open64_2(const char *path, int flags)
{
	return do_openat(AT_FDCWD, path, flags, 0, __builtin_return_address(0));
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return do_openat(dirfd, path, flags, 0, __builtin_return_address(0));
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return do_openat(dirfd, path, flags, 0, __builtin_return_address(0));
}

/* libc's own, exported beside sbrk: no lookup needed (the next sbrk
 * after the shim may be tcmalloc's hook, which calls it too). */
extern void *__sbrk(intptr_t increment);

EXPORT void *sbrk(intptr_t increment)
{
	if (increment > 0 && fault(K_SBRK)) {
		errno = ENOMEM;
		return (void *)-1;
	}
	return __sbrk(increment);
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;

__attribute__((constructor(101))) static void resolve(void)
{
	if (!__atomic_load_n(&real_create, __ATOMIC_ACQUIRE))
		__atomic_store_n(&real_create, (create_fn)dlsym(RTLD_NEXT, "pthread_create"),
				 __ATOMIC_RELEASE);
	read_env();
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	create_fn real = __atomic_load_n(&real_create, __ATOMIC_ACQUIRE);
	if (!real) { /* called before the constructor ran (another library's) */
		resolve();
		real = __atomic_load_n(&real_create, __ATOMIC_ACQUIRE);
		if (!real)
			return EAGAIN;
	}
	if (fault(K_THREAD))
		return EAGAIN;
	return real(t, attr, fn, arg);
}

/* ---- the report ---- */

__attribute__((destructor)) static void report(void)
{
	if (!verbose)
		return;
	char buf[1024], *p = buf;
	unsigned long calls = 0, faults = 0;
	for (int k = 0; k < K_N; k++) {
		calls += __atomic_load_n(&n_calls[k], __ATOMIC_RELAXED);
		faults += __atomic_load_n(&n_faults[k], __ATOMIC_RELAXED);
	}
	p = put_str(p, "faultshim: pid ");
	p = put_ul(p, (unsigned long)raw6(SYS_getpid, 0, 0, 0, 0, 0, 0));
	p = put_str(p, " calls ");
	p = put_ul(p, calls);
	p = put_str(p, " faults ");
	p = put_ul(p, faults);
	p = put_str(p, ":");
	for (int k = 0; k < K_N; k++) {
		unsigned long c = __atomic_load_n(&n_calls[k], __ATOMIC_RELAXED);
		if (!c)
			continue;
		p = put_str(p, " ");
		p = put_str(p, kind_name[k]);
		p = put_str(p, " ");
		p = put_ul(p, c);
		p = put_str(p, "/");
		p = put_ul(p, __atomic_load_n(&n_faults[k], __ATOMIC_RELAXED));
	}
	*p++ = '\n';
	raw6(SYS_write, 2, (long)buf, p - buf, 0, 0, 0);
}
