/* The report (report.c): the figures through an emitter, to stderr or a
 * file made with the OS primitives. Nothing here allocates. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../os/os.h"
#include "obs.h"

static unsigned swept_files; /* the files of processes gone removed (sweep_dead) */
static uint64_t started_ns;  /* hz_report_process's time, or the fork's */

/* ---- the walk: obs/'s own figures, first and last ---- */

/* The value in kB after key in a /proc file, in bytes: 0, or -1 when
 * the file cannot be read or has no such key. */
static int proc_kb(const char *path, const char *key, uint64_t *bytes)
{
	char buf[4096];
	size_t len;
	if (hz_os_read_file(path, buf, sizeof buf, &len))
		return -1;
	const char *p = strstr(buf, key);
	if (!p)
		return -1;
	*bytes = (uint64_t)strtoull(p + strlen(key), NULL, 10) << 10;
	return 0;
}

/* The engine's counters (counters.c), by name. */
void hz_obs_head(hz_counter_fn fn, void *arg)
{
	struct hz_tstats t;
	uint64_t calls = 0, bytes = 0;
	hz_tstats_sum(&t);
	/* memset above HZ_FRONT_MAX: the classes' sums. */
	for (int k = 0; k < HZ_CLASSES; k++) {
		calls += t.calls[HZ_OP_MEMSET][k];
		bytes += t.bytes[HZ_OP_MEMSET][k];
	}
	fn(arg, "memset.large.calls", calls, 0);
	fn(arg, "memset.large.bytes", bytes, 0);
	fn(arg, "memset_chk.calls", t.memset_chk_calls, 0);
	fn(arg, "hinted.calls", t.hinted_calls, 0);
	for (unsigned i = 0; i < hz_nkernels; i++) {
		char name[64];
		snprintf(name, sizeof name, "kernel.%s.calls", hz_kernels[i].name);
		fn(arg, name, t.kcalls[i], 0);
		snprintf(name, sizeof name, "kernel.%s.bytes", hz_kernels[i].name);
		fn(arg, name, t.kbytes[i], 0);
	}
}

void hz_obs_tail(hz_counter_fn fn, void *arg)
{
	fn(arg, "report.swept_files", __atomic_load_n(&swept_files, __ATOMIC_RELAXED), 0);
	fn(arg, "ab.dropped", hz_ab_dropped(), 0);
	fn(arg, "process.off", (uint64_t)hz_report_off, 1);
	uint64_t faults, cpu_ns, huge;
	if (!hz_os_usage(&faults, &cpu_ns)) {
		fn(arg, "process.minor_faults", faults, 0);
		fn(arg, "process.cpu_time_ns", cpu_ns, 0);
	}
	fn(arg, "process.wall_time_ns", hz_os_now_ns() - started_ns, 0);
	size_t rss, peak;
	if (!hz_os_footprint(&rss, &peak)) {
		fn(arg, "process.rss_bytes", rss, 1);
		fn(arg, "process.peak_rss_bytes", peak, 1);
	}
	if (!proc_kb("/proc/self/smaps_rollup", "\nAnonHugePages:", &huge))
		fn(arg, "process.anon_huge_bytes", huge, 1);
}

void hz_obs_find_figure(void *arg, const char *name, uint64_t value, int gauge)
{
	struct hz_obs_find *f = arg;
	(void)gauge;
	if (!f->found && !strcmp(name, f->name))
		f->value = value, f->found = 1;
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

void hz_report_figure(void *arg, const char *name, uint64_t value, int gauge)
{
	struct hz_report *r = arg;
	r->o.e->counter(&r->o, name, value, gauge);
}

static void begin_output(struct hz_report *r, int fd, const struct hz_emitter *e)
{
	r->o.e = e;
	r->o.fd = fd;
	r->o.error = 0;
	r->o.n = 0;
	r->o.len = 0;
	e->begin(&r->o);
	hz_obs_head(hz_report_figure, r);
}

/* What follows the other rooms' figures: obs/'s own, the classes, the
 * arms, the call sites. 0, or -1 with errno. */
static int end_output(struct hz_report *r)
{
	struct hz_out *o = &r->o;
	hz_obs_tail(hz_report_figure, r);
	struct hz_tstats t;
	hz_tstats_sum(&t);
	o->e->classes(o, &t);
	if (hz_ab_on)
		o->e->ab(o);
	if (hz_callsites_on)
		o->e->callsites(o);
	o->e->end(o);
	hz_out_flush(o);
	if (o->error)
		errno = o->error;
	return o->error ? -1 : 0;
}

/* ---- where it goes ---- */

/* The report's path, absolute, copied at setup; its format and interval. */
static char report_path[4096];
static const struct hz_emitter *report_format = &hz_emit_text;
static uint64_t report_interval_ms;

/* A file name: the path, the pid, ".tmp" and the NUL. */
#define NAME_MAX_LEN (sizeof report_path + 32)
_Static_assert(sizeof((struct hz_report *)0)->name >= NAME_MAX_LEN, "a report's file name");

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

/* Begins the report to path ("stderr", or a file as file_name makes it)
 * by emitter e, dump_lock held; 0, or -1 with errno. A file is written
 * whole beside its place (r->tmp), then renamed over it: a reader (a
 * textfile collector, hugezero report) sees the last report or the one
 * before, never part of one. */
static int begin_locked(struct hz_report *r, const char *path, const struct hz_emitter *e)
{
	r->name[0] = 0;
	if (!strcmp(path, "stderr")) {
		begin_output(r, 2, e);
		return 0;
	}
	file_name(r->name, path);
	snprintf(r->tmp, sizeof r->tmp, "%s.tmp", r->name);
	int fd, err = hz_os_create_file(r->tmp, e == &hz_emit_prom ? 0644 : 0600, &fd);
	if (err) {
		errno = err;
		return -1;
	}
	begin_output(r, fd, e);
	return 0;
}

static int end_locked(struct hz_report *r)
{
	int rc = end_output(r), err;
	if (!r->name[0])
		return rc;
	hz_os_close(r->o.fd);
	if (!rc && (err = hz_os_rename(r->tmp, r->name))) {
		errno = err;
		rc = -1;
	}
	if (rc) {
		err = errno;
		hz_os_unlink(r->tmp);
		errno = err;
	}
	return rc;
}

int hz_report_begin(struct hz_report *r, const char *path, const char *format)
{
	const struct hz_emitter *e = format ? find_format(format) : report_format;
	if (!e) {
		errno = EINVAL;
		return -1;
	}
	r->kind = 0;
	pthread_mutex_lock(&dump_lock);
	if (!begin_locked(r, path ? path : report_path[0] ? report_path : "stderr", e))
		return 0;
	int err = errno;
	pthread_mutex_unlock(&dump_lock);
	errno = err;
	return -1;
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

static void sweep_one(struct sweep *w, const char *name)
{
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
	static struct hz_os_dir d; /* dump_lock held */
	if (!hz_os_dir_open(&d, w.dir)) {
		for (const char *name; (name = hz_os_dir_next(&d));)
			sweep_one(&w, name);
		hz_os_dir_close(&d);
	}
	swept_files += w.removed;
}

int hz_report_begin_interval(struct hz_report *r)
{
	r->kind = 1;
	pthread_mutex_lock(&dump_lock);
	if (!begin_locked(r, report_path, report_format))
		return 0;
	int err = errno;
	pthread_mutex_unlock(&dump_lock);
	errno = err;
	return -1;
}

int hz_report_end(struct hz_report *r)
{
	int rc = end_locked(r);
	if (!rc && r->kind == 1 && report_format == &hz_emit_prom && strcmp(report_path, "stderr"))
		sweep_dead();
	if (r->kind != 2) {
		int err = errno;
		pthread_mutex_unlock(&dump_lock);
		errno = err;
	}
	return rc;
}

uint64_t hz_report_interval(void)
{
	return report_interval_ms;
}

void hz_report_no_interval(void)
{
	report_interval_ms = 0;
}

const char *hz_report_path(void)
{
	return report_path;
}

void hz_report_process(int off)
{
	hz_report_off = off;
	started_ns = hz_os_now_ns();
}

void hz_report_fork_child(void)
{
	started_ns = hz_os_now_ns();
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

int hz_report_child_due(void)
{
	return hz_os_now_ns() - child_born_ns >= report_interval_ms * 1000000u &&
	       __atomic_exchange_n(&hz_report_child_pending, 0, __ATOMIC_RELAXED);
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
	return bad;
}

int hz_report_begin_exit(struct hz_report *r)
{
	if (!report_path[0])
		return 1;
	r->kind = 2;
	pthread_mutex_lock(&dump_lock);
	if (report_format == &hz_emit_prom && report_interval_ms && strcmp(report_path, "stderr")) {
		char name[NAME_MAX_LEN];
		file_name(name, report_path);
		hz_os_unlink(name);
		return 1;
	}
	return begin_locked(r, report_path, report_format);
}
