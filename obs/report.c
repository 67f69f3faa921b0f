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

/* The report's path, absolute, copied at setup. */
static char report_path[4096];
static const struct hz_emitter *report_format = &hz_emit_text;

/* The report's file for this process: "%p" in the path becomes the pid,
 * otherwise ".PID" is appended. -1 with errno when it cannot be made. */
static int open_report(const char *path)
{
	char name[sizeof report_path + 16];
	const char *pp = strstr(path, "%p");
	int pid = hz_os_pid(), fd;
	if (pp)
		snprintf(name, sizeof name, "%.*s%d%s", (int)(pp - path), path, pid, pp + 2);
	else
		snprintf(name, sizeof name, "%s.%d", path, pid);
	int e = hz_os_create_private(name, &fd);
	if (e) {
		errno = e;
		return -1;
	}
	return fd;
}

/* One report at a time: two writers of one file would interleave. */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;

/* Writes the report to path ("stderr", or a file as open_report makes
 * it) by emitter e, dump_lock held; 0, or -1 with errno. */
static int dump_locked(const char *path, const struct hz_emitter *e)
{
	if (!strcmp(path, "stderr"))
		return write_report(2, e);
	int fd = open_report(path);
	if (fd < 0)
		return -1;
	int rc = write_report(fd, e);
	hz_os_close(fd);
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

void hz_report_fork_child(void)
{
	pthread_mutex_init(&dump_lock, NULL);
}

/* The interval's thread rewrites the report until the process ends. */
static void *interval_main(void *arg)
{
	uint64_t ms = (uint64_t)(uintptr_t)arg;
	for (;;) {
		hz_os_sleep_ms(ms);
		dump(report_path, report_format);
	}
	return NULL;
}

int hz_report_setup(const char *path, const char *format, uint64_t interval_ms)
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
	pthread_t tid;
	if (interval_ms) {
		if (pthread_create(&tid, NULL, interval_main, (void *)(uintptr_t)interval_ms))
			bad |= HZ_REPORT_NO_THREAD;
		else
			pthread_detach(tid);
	}
	return bad;
}

/* At exit: a preloaded library's destructors run after the program's.
 * The lock stays held: the interval thread, if any, writes no more, so
 * the process's end cannot cut a rewrite of the final report short. */
__attribute__((destructor)) static void report_at_exit(void)
{
	if (!report_path[0])
		return;
	int saved = errno;
	pthread_mutex_lock(&dump_lock);
	if (dump_locked(report_path, report_format))
		hz_os_log("cannot write the report to ", report_path, NULL);
	errno = saved;
}
