/* The report (report.h): one walk over the figures through an emitter,
 * to stderr or a file made with the OS primitives; the interval thread;
 * the exit. Nothing here allocates. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../os/os.h"
#include "ab.h"
#include "callsites.h"
#include "emit.h"
#include "obs.h"
#include "report.h"

/* ---- the output buffer ---- */

void hz_out_flush(struct hz_out *o)
{
	int e = o->len ? hz_os_write_all(o->fd, o->buf, o->len) : 0;
	if (e && !o->error)
		o->error = e;
	o->len = 0;
}

void hz_out_put(struct hz_out *o, const char *fmt, ...)
{
	char line[1024]; /* names in it are cut to 200 bytes (hz_out_str, frames) */
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	if (o->len + (size_t)n > sizeof o->buf)
		hz_out_flush(o);
	memcpy(o->buf + o->len, line, (size_t)n);
	o->len += (size_t)n;
}

void hz_out_str(struct hz_out *o, const char *s)
{
	char buf[200];
	size_t n = 0;
	for (; s && *s && n < sizeof buf - 3; s++) {
		if (*s == '"' || *s == '\\')
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n] = 0;
	hz_out_put(o, "\"%s\"", buf);
}

/* ---- one report: 0, or -1 with errno ---- */

static const struct hz_emitter *const emitters[] = {&hz_emit_text, &hz_emit_json, &hz_emit_prom};

static const struct hz_emitter *find_format(const char *name)
{
	for (size_t i = 0; i < sizeof emitters / sizeof emitters[0]; i++)
		if (!strcmp(emitters[i]->name, name))
			return emitters[i];
	return NULL;
}

static void emit_counter(void *arg, const char *name, uint64_t value, int gauge)
{
	struct hz_out *o = arg;
	o->e->counter(o, name, value, gauge);
}

static int write_report(int fd, const struct hz_emitter *e)
{
	struct hz_out o;
	o.e = e;
	o.fd = fd;
	o.error = 0;
	o.n = 0;
	o.len = 0;
	e->begin(&o);
	hz_obs_each(emit_counter, &o);
	struct hz_tstats t;
	hz_tstats_sum(&t);
	e->classes(&o, &t);
	if (hz_ab_on)
		e->ab(&o);
	if (hz_callsites_on)
		e->callsites(&o);
	e->end(&o);
	hz_out_flush(&o);
	if (o.error)
		errno = o.error;
	return o.error ? -1 : 0;
}

/* ---- where it goes ---- */

/* The report's path, absolute, copied at setup; its format and interval. */
static char report_path[4096];
static const struct hz_emitter *report_format = &hz_emit_text;
static uint64_t report_interval_ms;

/* A file name: the path, the pid, ".tmp" and the NUL. */
#define NAME_MAX_LEN (sizeof report_path + 32)

/* Where a process's pid goes in a report path: the file is the path's
 * first `cut` bytes, `dot`, the pid, then `suf`. "%p" becomes the pid;
 * otherwise ".PID" goes before a final ".prom" (a textfile collector
 * reads only *.prom), or at the end. */
struct pattern {
	size_t cut;
	const char *dot, *suf;
};

static struct pattern pattern_of(const char *path)
{
	const char *pp = strstr(path, "%p");
	size_t len = strlen(path);
	if (pp)
		return (struct pattern){(size_t)(pp - path), "", pp + 2};
	if (len > 5 && !strcmp(path + len - 5, ".prom"))
		return (struct pattern){len - 5, ".", path + len - 5};
	return (struct pattern){len, ".", ""};
}

/* The report's file for this process into name (pattern_of). */
static void file_name(char *name, const char *path)
{
	struct pattern f = pattern_of(path);
	snprintf(name, NAME_MAX_LEN, "%.*s%s%d%s", (int)f.cut, path, f.dot, hz_os_pid(), f.suf);
}

/* One report at a time: two writers of one file would interleave. */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;

/* Writes the report to path ("stderr", or a file as file_name makes it)
 * by emitter e, dump_lock held; 0, or -1 with errno. A file is written
 * whole beside its place, then renamed over it: a reader (a textfile
 * collector, hugezero report) sees the last report or the one before,
 * never part of one. */
static int dump_locked(const char *path, const struct hz_emitter *e)
{
	if (!strcmp(path, "stderr"))
		return write_report(2, e);
	char name[NAME_MAX_LEN], tmp[NAME_MAX_LEN];
	file_name(name, path);
	snprintf(tmp, sizeof tmp, "%s.tmp", name);
	int fd, err = hz_os_create_file(tmp, e == &hz_emit_prom ? 0644 : 0600, &fd);
	if (err) {
		errno = err;
		return -1;
	}
	int rc = write_report(fd, e);
	hz_os_close(fd);
	if (!rc && (err = hz_os_rename(tmp, name))) {
		errno = err;
		rc = -1;
	}
	if (rc) {
		err = errno;
		hz_os_unlink(tmp);
		errno = err;
	}
	return rc;
}

static int dump(const char *path, const struct hz_emitter *e)
{
	pthread_mutex_lock(&dump_lock);
	int rc = dump_locked(path, e);
	pthread_mutex_unlock(&dump_lock);
	return rc;
}

int hz_report_dump(const char *path, const char *format)
{
	const struct hz_emitter *e = format ? find_format(format) : report_format;
	if (!e) {
		errno = EINVAL;
		return -1;
	}
	return dump(path ? path : report_path[0] ? report_path : "stderr", e);
}

/* ---- the files of processes gone ----
 * In the collector's directory, the files this path makes for other pids
 * (as file_name makes them, or their temporary files) whose process no
 * longer exists in this PID namespace and that nobody rewrote for a while
 * (a process killed, a child that left by _exit) are removed. The age
 * keeps the files of processes of other PID namespaces (containers)
 * sharing the directory: theirs are rewritten every interval. */
#define SWEEP_EVERY_NS ((uint64_t)60 * 1000000000u)
#define STALE_MIN_NS ((uint64_t)300 * 1000000000u)

struct sweep {
	const char *dir, *pre, *suf; /* the path: dir/pre PID suf */
	size_t plen, slen;
	uint64_t now, stale;
	unsigned removed;
};

static void sweep_one(void *arg, const char *name)
{
	struct sweep *w = arg;
	size_t len = strlen(name), digits = 0;
	if (len <= w->plen || strncmp(name, w->pre, w->plen))
		return;
	while (name[w->plen + digits] >= '0' && name[w->plen + digits] <= '9' && digits < 10)
		digits++;
	const char *rest = name + w->plen + digits;
	if (!digits || strncmp(rest, w->suf, w->slen) || (rest[w->slen] && strcmp(rest + w->slen, ".tmp")))
		return;
	uint64_t pid = 0;
	for (size_t i = 0; i < digits; i++)
		pid = pid * 10 + (uint64_t)(name[w->plen + i] - '0');
	char path[NAME_MAX_LEN];
	uint64_t mtime;
	if (pid > INT32_MAX || (int)pid == hz_os_pid() || hz_os_pid_exists((int)pid) ||
	    (size_t)snprintf(path, sizeof path, "%s/%s", w->dir, name) >= sizeof path ||
	    hz_os_mtime_ns(path, &mtime) || w->now - mtime < w->stale)
		return;
	if (!hz_os_unlink(path))
		w->removed++;
}

static uint64_t swept_ns;
static unsigned swept_files;

/* After a write in the collector's format, at most once a minute; with
 * dump_lock held. */
static void sweep_dead(void)
{
	uint64_t now = hz_os_realtime_ns();
	if (now - swept_ns < SWEEP_EVERY_NS)
		return;
	swept_ns = now;
	/* The files' names: the path's last component, its pid's place in it. */
	struct pattern f = pattern_of(report_path);
	char dir[sizeof report_path], pre[sizeof report_path];
	const char *slash = strrchr(report_path, '/');
	if (!slash || (size_t)(slash - report_path) >= f.cut) /* the pid in a directory's name */
		return;
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - report_path), report_path);
	snprintf(pre, sizeof pre, "%.*s%s", (int)(f.cut - (size_t)(slash + 1 - report_path)), slash + 1, f.dot);
	uint64_t stale = 3 * report_interval_ms * 1000000u;
	struct sweep w = {dir[0] ? dir : "/", pre, f.suf, strlen(pre), strlen(f.suf), now,
			  stale > STALE_MIN_NS ? stale : STALE_MIN_NS, 0};
	hz_os_dir_each(w.dir, sweep_one, &w);
	swept_files += w.removed;
}

void hz_report_counters(hz_counter_fn fn, void *arg)
{
	fn(arg, "report.swept_files", __atomic_load_n(&swept_files, __ATOMIC_RELAXED), 0);
}

/* The interval's thread rewrites the report until the process ends. */
static void *interval_main(void *arg)
{
	(void)arg;
	for (int said = 0;; ) {
		hz_os_sleep_ms(report_interval_ms);
		pthread_mutex_lock(&dump_lock);
		int rc = dump_locked(report_path, report_format);
		if (!rc && report_format == &hz_emit_prom && strcmp(report_path, "stderr"))
			sweep_dead();
		pthread_mutex_unlock(&dump_lock);
		if (rc && !said) { /* once: it may fail every time */
			hz_os_log("cannot write the report to ", report_path, NULL);
			said = 1;
		}
	}
	return NULL;
}

void hz_report_fork_child(void)
{
	pthread_mutex_init(&dump_lock, NULL);
}

int hz_report_child_pending;
static uint64_t child_born_ns;

void hz_report_fork_child_ready(void)
{
	if (report_path[0] && report_interval_ms) {
		child_born_ns = hz_os_now_ns();
		__atomic_store_n(&hz_report_child_pending, 1, __ATOMIC_RELAXED);
	}
}

void hz_report_child_tick(void)
{
	if (hz_os_now_ns() - child_born_ns < report_interval_ms * 1000000u ||
	    !__atomic_exchange_n(&hz_report_child_pending, 0, __ATOMIC_RELAXED))
		return;
	if (hz_os_thread_start(interval_main, NULL))
		hz_os_log("cannot start the HUGEZERO_STATS_INTERVAL_MS thread in a forked child", NULL, NULL);
}

int hz_report_setup(const char *path, const char *format, uint64_t interval_ms, const char *labels)
{
	int bad = 0;
	if (!path)
		return 0;
	size_t n = 0, len = strlen(path);
	if (path[0] != '/' && strcmp(path, "stderr")) {
		if (hz_os_cwd(report_path, sizeof report_path)) {
			report_path[0] = 0;
			return HZ_REPORT_NO_CWD;
		}
		n = strlen(report_path);
		report_path[n++] = '/';
	}
	/* Room for the pid (at most 10 digits and a dot) and the NUL. */
	if (n + len + 12 > sizeof report_path) {
		report_path[0] = 0;
		return HZ_REPORT_TOO_LONG;
	}
	memcpy(report_path + n, path, len + 1);
	if (format && !(report_format = find_format(format))) {
		report_format = &hz_emit_text;
		bad |= HZ_REPORT_BAD_FORMAT;
	}
	if (labels && hz_prom_labels(labels))
		bad |= HZ_REPORT_BAD_LABELS;
	report_interval_ms = interval_ms;
	if (interval_ms && hz_os_thread_start(interval_main, NULL)) {
		report_interval_ms = 0;
		bad |= HZ_REPORT_NO_THREAD;
	}
	return bad;
}

/* At exit: a preloaded library's destructors run after the program's.
 * The lock stays held: the interval thread, if any, writes no more, so
 * the process's end cannot cut a rewrite of the final report short. A
 * collector's file (the Prometheus format with an interval) is removed:
 * the process's series end with it. */
__attribute__((destructor)) static void report_at_exit(void)
{
	if (!report_path[0])
		return;
	int saved = errno;
	pthread_mutex_lock(&dump_lock);
	if (report_format == &hz_emit_prom && report_interval_ms && strcmp(report_path, "stderr")) {
		char name[NAME_MAX_LEN];
		file_name(name, report_path);
		hz_os_unlink(name);
	} else if (dump_locked(report_path, report_format)) {
		hz_os_log("cannot write the report to ", report_path, NULL);
	}
	errno = saved;
}
