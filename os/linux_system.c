/* The OS contract on Linux (os.h): start, limits, clock, threads,
 * environment, stderr and files, through libc's wrappers of single system
 * calls, none of which allocates. errno is saved and restored around each. */
#define _GNU_SOURCE /* SCHED_IDLE */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "linux.h"
#include "os.h"

uint64_t hz_os_random64(void)
{
	uint64_t v = 0;
	int saved = errno;
	long n = syscall(SYS_getrandom, &v, sizeof v, GRND_NONBLOCK);
	errno = saved;
	if (n == (long)sizeof v)
		return v;
	/* A kernel-placed address (randomised by ASLR) and the clock, mixed. */
	return hz_os_mix64((uint64_t)(uintptr_t)&v ^ hz_os_now_ns());
}

/* ---- limits ---- */

void hz_os_memory(size_t *ram, size_t *swap)
{
	struct sysinfo si;
	int saved = errno;
	if (hz_os_status(syscall(SYS_sysinfo, &si), saved)) {
		*ram = *swap = 0;
		return;
	}
	*ram = (size_t)si.totalram * si.mem_unit;
	*swap = (size_t)si.totalswap * si.mem_unit;
}

static size_t rlimit_of(int which)
{
	struct rlimit r;
	int saved = errno;
	if (hz_os_status(getrlimit(which, &r), saved) || r.rlim_cur == RLIM_INFINITY || r.rlim_cur > SIZE_MAX)
		return SIZE_MAX;
	return (size_t)r.rlim_cur;
}

void hz_os_address_limits(size_t *as, size_t *data)
{
	*as = rlimit_of(RLIMIT_AS);
	*data = rlimit_of(RLIMIT_DATA);
}

/* ---- clock ---- */

static int clock_by_call;

void hz_os_clock_by_call(void)
{
	__atomic_store_n(&clock_by_call, 1, __ATOMIC_SEQ_CST);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec t;
	/* The coarse clocks' vDSO reads the kernel's last tick: no counter,
	 * no system call (a strict seccomp or a filter may refuse one). */
	if (__atomic_load_n(&clock_by_call, __ATOMIC_RELAXED))
		id = id == CLOCK_MONOTONIC ? CLOCK_MONOTONIC_COARSE : CLOCK_REALTIME_COARSE;
	clock_gettime(id, &t); /* vDSO: no system call, errno untouched on success */
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t hz_os_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t hz_os_coarse_ns(void)
{
	struct timespec t = {0, 0};
	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t hz_os_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void hz_os_sleep_ms(uint64_t ms)
{
	hz_os_sleep_us(ms * 1000);
}

void hz_os_yield(void)
{
	int saved = errno;
	sched_yield();
	errno = saved;
}

void hz_os_sleep_us(uint64_t us)
{
	int saved = errno;
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	errno = saved;
}

int hz_os_cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

void hz_os_cancel_restore(int old)
{
	pthread_setcancelstate(old, NULL);
}

int hz_os_runnable(unsigned *n)
{
	char buf[128];
	size_t len;
	int e = hz_os_read_file("/proc/loadavg", buf, sizeof buf - 1, &len);
	if (e)
		return e;
	buf[len] = 0;
	/* "0.12 0.10 0.05 2/345 6789": the fourth field, before its slash. */
	const char *p = buf;
	for (int field = 0; field < 3 && p; field++)
		p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
	if (!p || *p < '0' || *p > '9')
		return EINVAL;
	unsigned v = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (unsigned)(*p - '0');
	*n = v;
	return 0;
}

unsigned hz_os_cpus(void)
{
	int saved = errno;
	uint64_t set[8192 / 64]; /* 8192 CPUs */
	long r = syscall(SYS_sched_getaffinity, 0, sizeof set, set);
	unsigned n = 0;
	for (long i = 0; r > 0 && i < r / 8; i++)
		n += (unsigned)__builtin_popcountll(set[i]);
	errno = saved;
	return n ? n : 1;
}

/* ---- environment ---- */

const char *hz_os_getenv(const char *name)
{
	/* AT_SECURE: the environment belongs to another user. */
	return getauxval(AT_SECURE) ? NULL : getenv(name);
}

int hz_os_pid(void)
{
	return (int)getpid();
}

int hz_os_cwd(char *buf, size_t cap)
{
	int saved = errno;
	return hz_os_status(getcwd(buf, cap) ? 0 : -1, saved);
}

/* ---- stderr and files ---- */

int hz_os_write_all(int fd, const void *buf, size_t n)
{
	int saved = errno, e = 0;
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	errno = saved;
	return e;
}

void hz_os_log(const char *a, const char *b, const char *c)
{
	const char *parts[] = {"hugezero: ", a, b, c, "\n"};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (parts[i] && hz_os_write_all(2, parts[i], strlen(parts[i])))
			return;
}

int hz_os_path_present(const char *path)
{
	struct stat st;
	int saved = errno;
	int r = lstat(path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
	errno = saved;
	return r;
}

int hz_os_read_file(const char *path, char *buf, size_t cap, size_t *len)
{
	int saved = errno;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hz_os_status(-1, saved);
	ssize_t r;
	while ((r = read(fd, buf, cap - 1)) < 0 && errno == EINTR)
		;
	int e = hz_os_status(r < 0 ? -1 : 0, saved);
	close(fd);
	errno = saved;
	if (e)
		return e;
	buf[r] = 0;
	*len = (size_t)r;
	return 0;
}

int hz_os_free_page_reporting(void)
{
	/* The features of every balloon device, one '0'/'1' per bit. */
	static const char dir[] = "/sys/bus/virtio/drivers/virtio_balloon/virtio";
	enum { F_REPORTING = 5 };
	char path[sizeof dir + 16], bits[256];
	memcpy(path, dir, sizeof dir - 1);
	for (unsigned n = 0; n < 64; n++) {
		char *q = path + sizeof dir - 1;
		if (n >= 10)
			*q++ = (char)('0' + n / 10);
		*q++ = (char)('0' + n % 10);
		memcpy(q, "/features", sizeof "/features");
		size_t len;
		if (!hz_os_read_file(path, bits, sizeof bits, &len) && len > F_REPORTING &&
		    bits[F_REPORTING] == '1')
			return 1;
	}
	return 0;
}

int hz_os_create_file(const char *path, unsigned mode, int *out)
{
	int saved = errno, e = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
	if (fd < 0 && errno == EEXIST) {
		/* Non-blocking: a FIFO planted there must not hang the process. */
		fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) || st.st_uid != geteuid() || !S_ISREG(st.st_mode) ||
				ftruncate(fd, 0))) {
			close(fd);
			fd = -1;
			errno = EEXIST;
		}
	}
	/* The mode exactly, whatever the umask (a service's may be 007). A
	 * file system that refuses it keeps the file as created: written
	 * rather than not at all, and never wider than asked. */
	if (fd >= 0)
		(void)fchmod(fd, (mode_t)mode);
	if (fd < 0)
		e = errno;
	else
		*out = fd;
	errno = saved;
	return e;
}

int hz_os_rename(const char *from, const char *to)
{
	int saved = errno, e = rename(from, to) ? errno : 0;
	errno = saved;
	return e;
}

int hz_os_unlink(const char *path)
{
	int saved = errno, e = unlink(path) ? errno : 0;
	errno = saved;
	return e;
}

int hz_os_dir_open(struct hz_os_dir *d, const char *dir)
{
	int saved = errno;
	d->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d->error = d->fd < 0 ? errno : 0;
	d->len = d->at = 0;
	errno = saved;
	return d->error;
}

const char *hz_os_dir_next(struct hz_os_dir *d)
{
	for (;;) {
		if (d->at >= d->len) {
			int saved = errno;
			d->len = syscall(SYS_getdents64, d->fd, d->buf, sizeof d->buf);
			d->at = 0;
			if (d->len <= 0) {
				d->error = d->len < 0 ? errno : 0;
				d->len = 0;
				errno = saved;
				return NULL;
			}
		}
		/* struct linux_dirent64: ino, off, reclen, type, name. */
		unsigned short reclen;
		memcpy(&reclen, d->buf + d->at + 16, sizeof reclen);
		const char *name = d->buf + d->at + 19;
		d->at += reclen;
		if (strcmp(name, ".") && strcmp(name, ".."))
			return name;
	}
}

void hz_os_dir_close(struct hz_os_dir *d)
{
	int saved = errno;
	close(d->fd);
	errno = saved;
}

int hz_os_mtime_ns(const char *path, uint64_t *ns)
{
	int saved = errno;
	struct stat st;
	if (lstat(path, &st)) {
		int e = errno;
		errno = saved;
		return e;
	}
	*ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	return 0;
}

int hz_os_pid_exists(int pid)
{
	if (pid <= 0) /* kill would mean a process group */
		return 1;
	int saved = errno;
	int r = kill(pid, 0) == 0 || errno != ESRCH;
	errno = saved;
	return r;
}

void hz_os_close(int fd)
{
	int saved = errno;
	close(fd);
	errno = saved;
}

int hz_os_minor_faults(uint64_t *process, uint64_t *thread)
{
	struct rusage p, t;
	int saved = errno;
	int e = hz_os_status(getrusage(RUSAGE_SELF, &p) || getrusage(RUSAGE_THREAD, &t) ? -1 : 0, saved);
	if (e)
		return e;
	*process = (uint64_t)p.ru_minflt;
	*thread = (uint64_t)t.ru_minflt;
	return 0;
}

int hz_os_usage(uint64_t *minor_faults, uint64_t *cpu_ns)
{
	struct rusage u;
	int saved = errno;
	int e = hz_os_status(getrusage(RUSAGE_SELF, &u), saved);
	if (e)
		return e;
	*minor_faults = (uint64_t)u.ru_minflt;
	*cpu_ns = ((uint64_t)u.ru_utime.tv_sec + (uint64_t)u.ru_stime.tv_sec) * 1000000000u +
		  ((uint64_t)u.ru_utime.tv_usec + (uint64_t)u.ru_stime.tv_usec) * 1000u;
	return 0;
}

/* Reads /proc/self/status a line at a time, whatever its length (a
 * process in many groups has a Groups line of kilobytes, before the
 * fields below it), and stores in vals[i] the number after the line
 * that starts with names[i] ("VmHWM:"): 0 when each of the n was found,
 * or an errno (EINVAL: a field missing). errno kept. */
static int status_fields(const char *const *names, uint64_t *vals, int n)
{
	char buf[1024];
	int saved = errno, found = 0, skipping = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hz_os_status(-1, saved);
	size_t have = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', (size_t)(buf + have - line)))) {
			*nl = 0;
			for (int i = 0; i < n && !skipping; i++) {
				size_t len = strlen(names[i]);
				if (strncmp(line, names[i], len))
					continue;
				const char *p = line + len;
				while (*p == ' ' || *p == '\t')
					p++;
				if (*p >= '0' && *p <= '9') {
					vals[i] = strtoull(p, NULL, 10);
					found |= 1 << i;
				}
			}
			skipping = 0;
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf - 1) { /* a line longer than buf: its rest is no field */
			have = 0;
			skipping = 1;
		}
	}
	close(fd);
	errno = saved;
	return found == (1 << n) - 1 ? 0 : EINVAL;
}

int hz_os_footprint(size_t *rss, size_t *peak)
{
	static const char *const names[] = {"VmRSS:", "VmHWM:"};
	uint64_t v[2];
	int e = status_fields(names, v, 2);
	if (e)
		return e;
	*rss = (size_t)v[0] << 10;
	*peak = (size_t)v[1] << 10;
	return 0;
}

/* The dynamic loader's (and the static libc's): where the program's
 * arguments start, just above main's first frame. */
extern void *__libc_stack_end;

void hz_os_main_stack(uintptr_t *lo, uintptr_t *hi)
{
	const uintptr_t gap = (uintptr_t)128 << 20;
	uintptr_t top = ((uintptr_t)__libc_stack_end + hz_page_size - 1) & ~(uintptr_t)(hz_page_size - 1);
	struct rlimit r;
	uintptr_t reach = getrlimit(RLIMIT_STACK, &r) || r.rlim_cur > gap ? gap : (uintptr_t)r.rlim_cur;
	*hi = top;
	*lo = top > reach ? top - reach : top;
}

uint64_t hz_os_thread_cpu_ns(void)
{
	struct timespec t;
	int saved = errno;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)) {
		errno = saved;
		return 0;
	}
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int hz_os_thread_start(void *(*fn)(void *), void *arg)
{
	int saved = errno;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	if (pthread_attr_init(&attr))
		return EAGAIN;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, (size_t)256 << 10);
	/* The new thread inherits the mask: blocked from its first
	 * instruction, so no process-directed signal is ever delivered to it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&t, &attr, fn, arg);
	if (e == EINVAL && !(e = pthread_create(&t, NULL, fn, arg))) /* a static TLS larger than the stack */
		pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	errno = saved;
	return e;
}

enum hz_sched hz_os_sched_background(void)
{
	int saved = errno;
	struct sched_param sp = {0};
	enum hz_sched r = HZ_SCHED_NORMAL;
	/* Linux: pid 0 and who 0 name the calling thread, not the process. */
	if (!sched_setscheduler(0, SCHED_IDLE, &sp))
		r = HZ_SCHED_IDLE;
	else if (!setpriority(PRIO_PROCESS, 0, 19))
		r = HZ_SCHED_NICE19;
	errno = saved;
	return r;
}

int hz_os_thread_id(void)
{
	return (int)syscall(SYS_gettid);
}

int hz_os_sched_normal(int tid)
{
	int saved = errno;
	struct sched_param sp = {0};
	int r = sched_setscheduler(tid, SCHED_OTHER, &sp) || setpriority(PRIO_PROCESS, (id_t)tid, 0) ? -1 : 0;
	errno = saved;
	return r;
}

int hz_os_seccomp_mode(void)
{
	static const char *const names[] = {"Seccomp:"};
	uint64_t mode;
	if (status_fields(names, &mode, 1) || mode > 2)
		return -1;
	return (int)mode;
}

int hz_os_sched_inherit(int tid)
{
	int saved = errno, pol = sched_getscheduler(0), r;
	struct sched_param sp = {0};
	if ((pol == SCHED_FIFO || pol == SCHED_RR) && !sched_getparam(0, &sp))
		r = sched_setscheduler(tid, pol, &sp) ? -1 : 0;
	else
		r = hz_os_sched_normal(tid);
	errno = saved;
	return r;
}

static void *probe_main(void *arg)
{
	*(int *)arg = (int)hz_os_sched_background();
	return NULL;
}

int hz_os_sched_background_probe(void)
{
	int saved = errno, got = -1;
	pthread_t t;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&t, NULL, probe_main, &got);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!e)
		pthread_join(t, NULL);
	errno = saved;
	return e ? -1 : got;
}

int hz_os_barrier_threads(void)
{
	int saved = errno, e = 0;
	/* 1 << 3: MEMBARRIER_CMD_PRIVATE_EXPEDITED, 1 << 4: its registration,
	 * 1 << 0: MEMBARRIER_CMD_GLOBAL (linux/membarrier.h). */
	if (syscall(SYS_membarrier, 1 << 4, 0, 0) || syscall(SYS_membarrier, 1 << 3, 0, 0))
		e = syscall(SYS_membarrier, 1 << 0, 0, 0) ? errno : 0;
	errno = saved;
	return e;
}
