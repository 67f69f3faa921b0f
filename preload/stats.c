/* Counters by name (hz_stat), and the report HUGEZERO_STATS asks for at
 * exit. Nothing here allocates: names are built in stack buffers, files
 * opened and written with plain system calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../allocator/large.h"
#include "../arch/arch.h"
#include "../include/hugezero.h"
#include "options.h"
#include "stats.h"

static uint64_t load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

void hz_counters_each(hz_counter_fn fn, void *arg)
{
	const struct hz_counters_raw *r = &hz_counters_raw;
	fn(arg, "memset.large.calls", load(&r->memset_large_calls));
	fn(arg, "memset.large.bytes", load(&r->memset_large_bytes));
	fn(arg, "memset_chk.calls", load(&r->memset_chk_calls));
	fn(arg, "hinted.calls", load(&r->hinted_calls));
	for (unsigned i = 0; i < hz_nkernels; i++) {
		char name[64];
		snprintf(name, sizeof name, "kernel.%s.calls", hz_kernels[i].name);
		fn(arg, name, load(&r->calls[i]));
		snprintf(name, sizeof name, "kernel.%s.bytes", hz_kernels[i].name);
		fn(arg, name, load(&r->bytes[i]));
	}

	struct hz_large_stats s;
	hz_large_stats(&s);
	fn(arg, "malloc.large.calls", s.allocs);
	fn(arg, "malloc.large.frees", s.frees);
	fn(arg, "calloc.large.calls", s.callocs);
	fn(arg, "calloc.large.bytes", s.calloc_bytes);
	fn(arg, "calloc.large.known_zero_bytes", s.calloc_bytes_known_zero);
	fn(arg, "large.allocated_bytes", s.allocated_bytes);
	fn(arg, "large.dirty_free_bytes", s.dirty_free_bytes);
	fn(arg, "large.huge_cached_bytes", s.huge_cached_bytes);
	fn(arg, "large.chunks", s.chunks);
	fn(arg, "purge.batches", s.purges);
	fn(arg, "purge.ranges", s.purge_ranges);
	fn(arg, "purge.bytes", s.purged_bytes);
	fn(arg, "purge.syscalls", s.purge_syscalls);
	fn(arg, "purge.fallbacks", s.purge_fallbacks);
	fn(arg, "hugetlb.chunks", s.hugetlb_chunks);
	fn(arg, "hugetlb.fallbacks", s.hugetlb_fallbacks);

	if (hz_small_counters)
		hz_small_counters(fn, arg);
}

struct find {
	const char *name;
	uint64_t value;
	int found;
};

static void find_one(void *arg, const char *name, uint64_t value)
{
	struct find *f = arg;
	if (!f->found && !strcmp(name, f->name))
		f->value = value, f->found = 1;
}

HZ_EXPORT int hz_stat(const char *name, uint64_t *value)
{
	struct find f = {name, 0, 0};
	hz_counters_each(find_one, &f);
	if (!f.found)
		return ENOENT;
	*value = f.value;
	return 0;
}

struct out {
	int fd, error;
};

static void write_one(void *arg, const char *name, uint64_t value)
{
	struct out *o = arg;
	char line[128];
	int n = snprintf(line, sizeof line, "%s %llu\n", name, (unsigned long long)value);
	if (n > 0 && (size_t)n < sizeof line && write(o->fd, line, (size_t)n) != n)
		o->error = 1;
}

int hz_stats_write(int fd)
{
	struct out o = {fd, 0};
	hz_counters_each(write_one, &o);
	return o.error ? -1 : 0;
}

/* The report's path, absolute, copied at initialisation: servers that set
 * their process title (redis, PostgreSQL) overwrite the environment's
 * strings, and servers change directory. */
static char report_path[4096];

void hz_stats_init(void)
{
	const struct hz_option_value *v = &hz_option_values[HZ_OPT_STATS];
	if (!v->set)
		return;
	size_t n = 0, len = strlen(v->str);
	if (v->str[0] != '/' && strcmp(v->str, "stderr")) {
		if (!getcwd(report_path, sizeof report_path)) {
			hz_log("ignoring HUGEZERO_STATS: no current directory", "", "");
			report_path[0] = 0;
			return;
		}
		n = strlen(report_path);
		report_path[n++] = '/';
	}
	/* Room for the pid (at most 10 digits and a dot) and the NUL. */
	if (n + len + 12 > sizeof report_path) {
		hz_log("ignoring HUGEZERO_STATS: path too long", "", "");
		report_path[0] = 0;
		return;
	}
	memcpy(report_path + n, v->str, len + 1);
}

/* The report's file: "%p" in the path becomes the pid (the first one
 * only), otherwise ".PID" is appended, so each process of a forking server
 * writes its own. Created with mode 0600; a symlink at the path is not
 * followed, and an existing file is written only if this user owns it. */
static int open_report(const char *path)
{
	char name[sizeof report_path + 16];
	const char *pp = strstr(path, "%p");
	int pid = (int)getpid();
	if (pp)
		snprintf(name, sizeof name, "%.*s%d%s", (int)(pp - path), path, pid, pp + 2);
	else
		snprintf(name, sizeof name, "%s.%d", path, pid);
	int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 || errno != EEXIST)
		return fd;
	fd = open(name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) || st.st_uid != geteuid() || !S_ISREG(st.st_mode))) {
		close(fd);
		return -1;
	}
	if (fd >= 0 && ftruncate(fd, 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* At exit: a preloaded library's destructors run after the program's. */
__attribute__((destructor)) static void hz_stats_at_exit(void)
{
	if (!report_path[0])
		return;
	int saved = errno;
	if (!strcmp(report_path, "stderr")) {
		hz_stats_write(2);
	} else {
		int fd = open_report(report_path);
		if (fd < 0 || hz_stats_write(fd))
			hz_log("cannot write the report to ", report_path, "");
		if (fd >= 0)
			close(fd);
	}
	errno = saved;
}
