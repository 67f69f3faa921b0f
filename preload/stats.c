/* Counters by name (hz_stat), and the report HUGEZERO_STATS asks for at
 * exit. Nothing here allocates: names are built in stack buffers, files
 * opened and written with plain system calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../allocator/large.h"
#include "../arch/arch.h"
#include "../include/hugezero.h"
#include "ab.h"
#include "callsites.h"
#include "options.h"
#include "stats.h"

/* ---- per-thread counters ---- */

__thread struct hz_tstats hz_tstats __attribute__((tls_model("initial-exec")));
const char *const hz_op_names[HZ_OPS] = {"malloc", "calloc", "realloc", "free", "memset"};

static pthread_mutex_t tstats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hz_tstats *tstats_list; /* live threads' blocks */
static struct hz_tstats tstats_gone;  /* threads that exited */
static pthread_key_t tstats_key;
static int tstats_key_ok;

static void add(struct hz_tstats *to, const struct hz_tstats *from)
{
	for (int o = 0; o < HZ_OPS; o++)
		for (int k = 0; k < HZ_CLASSES; k++) {
			to->calls[o][k] += from->calls[o][k];
			to->bytes[o][k] += from->bytes[o][k];
		}
}

static void unlink_locked(struct hz_tstats *t)
{
	for (struct hz_tstats **pp = &tstats_list; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
}

/* Thread exit (a key destructor, while the thread's TLS is still there):
 * its counts go to the totals, its block leaves the list for good. */
static void tstats_exit(void *arg)
{
	struct hz_tstats *t = arg;
	pthread_mutex_lock(&tstats_lock);
	unlink_locked(t);
	add(&tstats_gone, t);
	t->state = 2;
	pthread_mutex_unlock(&tstats_lock);
}

/* Never waits: counting may happen in a signal handler that interrupted
 * this very function or a report. When the lock is busy the block stays
 * unlinked for now and keeps counting; a later count links it. */
void hz_tstats_link(struct hz_tstats *t)
{
	if (pthread_mutex_trylock(&tstats_lock))
		return;
	if (!t->state) {
		t->next = tstats_list;
		tstats_list = t;
		t->state = 1;
	}
	pthread_mutex_unlock(&tstats_lock);
	/* The key exists from initialisation on; a thread that counted
	 * before it (the main thread) is summed until exit anyway. */
	if (tstats_key_ok)
		pthread_setspecific(tstats_key, t);
}

void hz_tstats_sum(struct hz_tstats *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&tstats_lock);
	add(out, &tstats_gone);
	for (struct hz_tstats *t = tstats_list; t; t = t->next)
		add(out, t);
	pthread_mutex_unlock(&tstats_lock);
}

/* fork: the lock is taken around it; the child counts from zero (the
 * engine's counters too), with only its own thread's block. */
static void tstats_prepare(void)
{
	pthread_mutex_lock(&tstats_lock);
}

static void tstats_parent(void)
{
	pthread_mutex_unlock(&tstats_lock);
}

static void tstats_child(void)
{
	struct hz_tstats *me = &hz_tstats;
	memset(&hz_counters_raw, 0, sizeof hz_counters_raw);
	memset(&tstats_gone, 0, sizeof tstats_gone);
	tstats_list = NULL;
	int linked = me->state == 1;
	memset(me, 0, sizeof *me);
	if (linked) {
		me->state = 1;
		tstats_list = me;
	}
	pthread_mutex_unlock(&tstats_lock);
}

static uint64_t load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* The value in kB after key in a /proc file, in bytes; 0 if absent. */
static uint64_t proc_kb(const char *path, const char *key)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strstr(buf, key);
	return p ? (uint64_t)strtoull(p + strlen(key), NULL, 10) << 10 : 0;
}

/* VmRSS and VmHWM, and the transparent huge pages mapped (AnonHugePages). */
static void process_rss(uint64_t *rss, uint64_t *hwm, uint64_t *huge)
{
	*rss = proc_kb("/proc/self/status", "\nVmRSS:");
	*hwm = proc_kb("/proc/self/status", "\nVmHWM:");
	*huge = proc_kb("/proc/self/smaps_rollup", "\nAnonHugePages:");
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
	fn(arg, "thp.advised", load(&hz_thp_advised));
	fn(arg, "thp.refused", load(&hz_thp_refused));
	fn(arg, "ab.dropped", hz_ab_dropped());

	if (hz_small_counters)
		hz_small_counters(fn, arg);

	uint64_t rss = 0, hwm = 0, huge = 0;
	process_rss(&rss, &hwm, &huge);
	fn(arg, "process.rss_bytes", rss);
	fn(arg, "process.peak_rss_bytes", hwm);
	fn(arg, "process.anon_huge_bytes", huge);
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

/* ---- the report: text, JSON or Prometheus text exposition ---- */

enum hz_format { HZ_FMT_TEXT, HZ_FMT_JSON, HZ_FMT_PROM };

/* Output through a stack buffer, flushed with write(2). */
struct out {
	int fd, error, format;
	int pass;       /* Prometheus A/B section: 0 histograms, 1 ratios */
	unsigned n;     /* items written so far (JSON commas) */
	size_t len;
	char buf[2048];
};

static void flush(struct out *o)
{
	size_t done = 0;
	while (done < o->len) {
		ssize_t w = write(o->fd, o->buf + done, o->len - done);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			o->error = 1;
			break;
		}
		done += (size_t)w;
	}
	o->len = 0;
}

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	char line[1024]; /* names in it are cut to 200 bytes (put_str, frames) */
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	if (o->len + (size_t)n > sizeof o->buf)
		flush(o);
	memcpy(o->buf + o->len, line, (size_t)n);
	o->len += (size_t)n;
}

/* Figures of state rather than running totals: Prometheus gauges. */
static int is_gauge(const char *name)
{
	static const char *const gauges[] = {
		"large.allocated_bytes", "large.dirty_free_bytes", "large.huge_cached_bytes",
		"large.chunks", "malloc.small.allocated_bytes", "malloc.small.mapped_bytes",
		"process.rss_bytes", "process.peak_rss_bytes", "process.anon_huge_bytes",
	};
	for (size_t i = 0; i < sizeof gauges / sizeof gauges[0]; i++)
		if (!strcmp(name, gauges[i]))
			return 1;
	return 0;
}

/* A Prometheus name: hugezero_ and the counter's name, dots as
 * underscores, counters ending in _total. */
static void prom_name(char *out, size_t size, const char *name)
{
	size_t n = (size_t)snprintf(out, size, "hugezero_%s", name);
	for (char *c = out; *c; c++)
		if (*c == '.')
			*c = '_';
	if (!is_gauge(name) && n + 6 < size)
		strcat(out, "_total");
}

static void write_one(void *arg, const char *name, uint64_t value)
{
	struct out *o = arg;
	unsigned long long v = (unsigned long long)value;
	char pn[128];
	switch (o->format) {
	case HZ_FMT_TEXT:
		put(o, "%s %llu\n", name, v);
		break;
	case HZ_FMT_JSON:
		put(o, "%s\n    \"%s\": %llu", o->n ? "," : "", name, v);
		break;
	case HZ_FMT_PROM:
		prom_name(pn, sizeof pn, name);
		put(o, "# HELP %s hugezero's %s.\n# TYPE %s %s\n%s{pid=\"%d\"} %llu\n", pn, name, pn,
		    is_gauge(name) ? "gauge" : "counter", pn, (int)getpid(), v);
		break;
	}
	o->n++;
}

/* The smallest size in class k. */
static unsigned long long class_min(int k)
{
	return k <= 1 ? 0 : 1ull << (k - 1);
}

static void write_classes(struct out *o, const struct hz_tstats *t)
{
	static const char *const what[2] = {"calls", "bytes"};
	int pid = (int)getpid();
	if (o->format == HZ_FMT_JSON)
		put(o, "\n  },\n  \"classes\": {");
	for (int w = 0; w < 2; w++) {
		if (o->format == HZ_FMT_PROM)
			put(o, "# HELP hugezero_%s_total %s by operation and size class (the class's "
			       "smallest size, in bytes; memset from 16 KiB).\n# TYPE hugezero_%s_total counter\n",
			    what[w], w ? "Bytes" : "Calls", what[w]);
		for (int op = 0; op < HZ_OPS; op++) {
			if (o->format == HZ_FMT_JSON && w == 0)
				put(o, "%s\n    \"%s\": [", op ? "," : "", hz_op_names[op]);
			int first = 1;
			for (int k = 0; k < HZ_CLASSES; k++) {
				if (!t->calls[op][k])
					continue;
				unsigned long long c = t->calls[op][k], b = t->bytes[op][k];
				if (o->format == HZ_FMT_TEXT && w == 0)
					put(o, "%s.class.%llu.calls %llu\n%s.class.%llu.bytes %llu\n",
					    hz_op_names[op], class_min(k), c, hz_op_names[op], class_min(k), b);
				else if (o->format == HZ_FMT_JSON && w == 0)
					put(o, "%s{\"min\": %llu, \"calls\": %llu, \"bytes\": %llu}",
					    first ? "" : ", ", class_min(k), c, b);
				else if (o->format == HZ_FMT_PROM)
					put(o, "hugezero_%s_total{pid=\"%d\",op=\"%s\",class=\"%llu\"} %llu\n",
					    what[w], pid, hz_op_names[op], class_min(k), w ? b : c);
				first = 0;
			}
			if (o->format == HZ_FMT_JSON && w == 0)
				put(o, "]");
		}
	}
	if (o->format == HZ_FMT_JSON)
		put(o, "\n  }");
}

/* The A/B section: per operation and size class, each arm's figures and
 * the B/A ratio of mean times with its 95% interval and the verdict. */
static void write_ab_cell(void *arg, int op, int k, const struct hz_ab_cell *a,
			  const struct hz_ab_cell *b, const uint64_t *ha, const uint64_t *hb)
{
	struct out *o = arg;
	struct hz_ab_result r;
	hz_ab_compare(a, b, &r);
	const struct hz_ab_cell *cell[2] = {a, b};
	const uint64_t *hist[2] = {ha, hb};
	const char *arm[2] = {"A", "B"};
	const char *name = hz_ab_op_names[op];
	unsigned long long lo = class_min(k);
	int pid = (int)getpid();
	if (o->format == HZ_FMT_TEXT) {
		put(o, "ab %s from %llu:", name, lo);
		for (int i = 0; i < 2; i++) {
			double mean = cell[i]->calls ? cell[i]->ns / (double)cell[i]->calls : 0;
			put(o, " %s %llu calls mean %.0f ns p50 %.0f p90 %.0f p99 %.0f %.2f GB/s;", arm[i],
			    (unsigned long long)cell[i]->calls, mean, hz_ab_quantile(hist[i], 0.5),
			    hz_ab_quantile(hist[i], 0.9), hz_ab_quantile(hist[i], 0.99),
			    cell[i]->ns > 0 ? (double)cell[i]->bytes / cell[i]->ns : 0);
		}
		put(o, " B/A %.3f [%.3f, %.3f]: %s\n", r.ratio, r.lo, r.hi, r.verdict);
	} else if (o->format == HZ_FMT_JSON) {
		put(o, "%s\n    {\"op\": \"%s\", \"min\": %llu, ", o->n++ ? "," : "", name, lo);
		for (int i = 0; i < 2; i++) {
			put(o, "\"%s\": {\"calls\": %llu, \"bytes\": %llu, \"ns\": %.0f, \"ns2\": %.17g, "
			       "\"p50_ns\": %.0f, \"p90_ns\": %.0f, \"p99_ns\": %.0f, \"hist\": [",
			    arm[i], (unsigned long long)cell[i]->calls, (unsigned long long)cell[i]->bytes,
			    cell[i]->ns, cell[i]->ns2, hz_ab_quantile(hist[i], 0.5),
			    hz_ab_quantile(hist[i], 0.9), hz_ab_quantile(hist[i], 0.99));
			int first = 1;
			for (int h = 0; h < HZ_AB_BUCKETS; h++)
				if (hist[i][h]) {
					put(o, "%s[%.0f, %llu]", first ? "" : ", ", hz_ab_bucket_ns(h),
					    (unsigned long long)hist[i][h]);
					first = 0;
				}
			put(o, "]}, ");
		}
		put(o, "\"ratio\": %.6f, \"lo\": %.6f, \"hi\": %.6f, \"verdict\": \"%s\"}", r.ratio, r.lo,
		    r.hi, r.verdict);
	} else if (o->pass == 0) {
		for (int i = 0; i < 2; i++) {
			const char *l = "pid=\"%d\",op=\"%s\",class=\"%llu\",arm=\"%s\"";
			char labels[160];
			snprintf(labels, sizeof labels, l, pid, name, lo, arm[i]);
			uint64_t cum = 0;
			for (int h = 0; h < HZ_AB_BUCKETS; h++) {
				cum += hist[i][h];
				if (hist[i][h] || h + 1 == HZ_AB_BUCKETS)
					put(o, "hugezero_ab_duration_seconds_bucket{%s,le=\"%.9g\"} %llu\n", labels,
					    (h + 1 < HZ_AB_BUCKETS ? hz_ab_bucket_ns(h + 1) : hz_ab_bucket_ns(h) * 2) / 1e9,
					    (unsigned long long)cum);
			}
			put(o, "hugezero_ab_duration_seconds_bucket{%s,le=\"+Inf\"} %llu\n", labels,
			    (unsigned long long)cum);
			put(o, "hugezero_ab_duration_seconds_sum{%s} %.9g\n", labels, cell[i]->ns / 1e9);
			put(o, "hugezero_ab_duration_seconds_count{%s} %llu\n", labels,
			    (unsigned long long)cell[i]->calls);
		}
	} else if (r.ratio > 0) { /* no ratio below 2 calls an arm */
		put(o, "hugezero_ab_ratio{pid=\"%d\",op=\"%s\",class=\"%llu\",bound=\"mean\"} %.6f\n", pid,
		    name, lo, r.ratio);
		put(o, "hugezero_ab_ratio{pid=\"%d\",op=\"%s\",class=\"%llu\",bound=\"lo95\"} %.6f\n", pid,
		    name, lo, r.lo);
		put(o, "hugezero_ab_ratio{pid=\"%d\",op=\"%s\",class=\"%llu\",bound=\"hi95\"} %.6f\n", pid,
		    name, lo, r.hi);
	}
}

static void write_ab(struct out *o)
{
	if (!hz_ab_on)
		return;
	switch (o->format) {
	case HZ_FMT_TEXT:
		hz_ab_each(write_ab_cell, o);
		break;
	case HZ_FMT_JSON:
		put(o, ",\n  \"ab\": [");
		o->n = 0;
		hz_ab_each(write_ab_cell, o);
		put(o, "\n  ]");
		break;
	case HZ_FMT_PROM: /* each family's samples together: histograms, then ratios */
		put(o, "# HELP hugezero_ab_duration_seconds Time of calls by arm (A: glibc's way, B: "
		       "hugezero's), operation and size class.\n"
		       "# TYPE hugezero_ab_duration_seconds histogram\n");
		o->pass = 0;
		hz_ab_each(write_ab_cell, o);
		put(o, "# HELP hugezero_ab_ratio B/A ratio of mean times and its 95%% interval.\n"
		       "# TYPE hugezero_ab_ratio gauge\n");
		o->pass = 1;
		hz_ab_each(write_ab_cell, o);
		break;
	}
}

/* The top call sites (HUGEZERO_CALLSITES). */
static void put_str(struct out *o, const char *s)
{
	/* JSON and Prometheus label strings: quotes and backslashes escaped. */
	char buf[200];
	size_t n = 0;
	for (; s && *s && n < sizeof buf - 3; s++) {
		if (*s == '"' || *s == '\\')
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n] = 0;
	put(o, "\"%s\"", buf);
}

static void write_site(void *arg, unsigned rank, uint64_t calls, uint64_t bytes,
		       const struct hz_site_frame *f, int n)
{
	struct out *o = arg;
	unsigned long long c = (unsigned long long)calls, b = (unsigned long long)bytes;
	switch (o->format) {
	case HZ_FMT_TEXT:
		put(o, "callsite %u: about %llu calls, %llu bytes\n", rank, c, b);
		for (int i = 0; i < n; i++)
			put(o, "  %.200s+0x%lx (%.300s +0x%lx build-id %s)\n", f[i].function ? f[i].function : "?",
			    (unsigned long)f[i].offset, f[i].module, (unsigned long)f[i].module_offset,
			    f[i].build_id[0] ? f[i].build_id : "none");
		break;
	case HZ_FMT_JSON:
		put(o, "%s\n    {\"rank\": %u, \"calls\": %llu, \"bytes\": %llu, \"frames\": [", rank > 1 ? "," : "",
		    rank, c, b);
		for (int i = 0; i < n; i++) {
			put(o, "%s{\"function\": ", i ? ", " : "");
			put_str(o, f[i].function ? f[i].function : "");
			put(o, ", \"offset\": %lu, \"module\": ", (unsigned long)f[i].offset);
			put_str(o, f[i].module);
			put(o, ", \"module_offset\": %lu, \"build_id\": \"%s\"}", (unsigned long)f[i].module_offset,
			    f[i].build_id);
		}
		put(o, "]}");
		break;
	case HZ_FMT_PROM:
		put(o, "hugezero_callsite_bytes_total{pid=\"%d\",rank=\"%u\",site=", (int)getpid(), rank);
		char site[160];
		snprintf(site, sizeof site, "%s+0x%lx", n && f[0].function ? f[0].function : "?",
			 n ? (unsigned long)f[0].offset : 0ul);
		put_str(o, site);
		put(o, "} %llu\n", b);
		break;
	}
}

static void write_callsites(struct out *o)
{
	unsigned period = 0;
	if (!hz_callsites_each || !hz_callsites_on)
		return;
	if (o->format == HZ_FMT_JSON)
		put(o, ",\n  \"callsites\": [");
	else if (o->format == HZ_FMT_PROM)
		put(o, "# HELP hugezero_callsite_bytes_total Bytes cleared by large memset and calloc "
		       "calls from the top call sites (estimated from samples).\n"
		       "# TYPE hugezero_callsite_bytes_total counter\n");
	hz_callsites_each(write_site, o, 10, &period);
	if (o->format == HZ_FMT_JSON)
		put(o, "\n  ],\n  \"callsites_period\": %u", period);
}

static int parse_format(const char *s)
{
	if (!s || !strcmp(s, "text"))
		return HZ_FMT_TEXT;
	if (!strcmp(s, "json"))
		return HZ_FMT_JSON;
	if (!strcmp(s, "prometheus"))
		return HZ_FMT_PROM;
	return -1;
}

static int write_report(int fd, int format)
{
	struct out o;
	o.fd = fd;
	o.error = 0;
	o.format = format;
	o.n = 0;
	o.len = 0;
	o.pass = 0;
	if (format == HZ_FMT_JSON)
		put(&o, "{\n  \"pid\": %d,\n  \"counters\": {", (int)getpid());
	hz_counters_each(write_one, &o);
	struct hz_tstats t;
	hz_tstats_sum(&t);
	write_classes(&o, &t);
	write_ab(&o);
	write_callsites(&o);
	if (format == HZ_FMT_JSON)
		put(&o, "\n}\n");
	flush(&o);
	return o.error ? -1 : 0;
}

int hz_stats_write(int fd)
{
	return write_report(fd, HZ_FMT_TEXT);
}

/* The report's path, absolute, copied at initialisation: servers that set
 * their process title (redis, PostgreSQL) overwrite the environment's
 * strings, and servers change directory. */
static char report_path[4096];
static int report_format;
static void *interval_main(void *arg);
static void dump_child(void);

void hz_stats_init(void)
{
	tstats_key_ok = !pthread_key_create(&tstats_key, tstats_exit);
	pthread_atfork(tstats_prepare, tstats_parent, tstats_child);
	pthread_atfork(NULL, NULL, dump_child);

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

	const struct hz_option_value *f = &hz_option_values[HZ_OPT_STATS_FORMAT];
	report_format = parse_format(f->set ? f->str : NULL);
	if (report_format < 0) {
		hz_log("ignoring HUGEZERO_STATS_FORMAT: not text, json or prometheus: ", f->str, "");
		report_format = HZ_FMT_TEXT;
	}
	const struct hz_option_value *iv = &hz_option_values[HZ_OPT_STATS_INTERVAL_MS];
	pthread_t tid;
	if (iv->set && iv->size) {
		if (pthread_create(&tid, NULL, interval_main, (void *)(uintptr_t)iv->size))
			hz_log("cannot start the HUGEZERO_STATS_INTERVAL_MS thread", "", "");
		else
			pthread_detach(tid);
	}
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
	fd = open(name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
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

/* One report at a time (the interval thread, hz_stats_dump, the exit):
 * two writers of one file would interleave. */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;

/* Writes the report to path ("stderr", or a file as open_report makes
 * it) in format, dump_lock held; 0, or -1 with errno. */
static int dump_locked(const char *path, int format)
{
	if (!strcmp(path, "stderr"))
		return write_report(2, format);
	int fd = open_report(path);
	if (fd < 0)
		return -1;
	int rc = write_report(fd, format);
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

static int dump(const char *path, int format)
{
	pthread_mutex_lock(&dump_lock);
	int rc = dump_locked(path, format);
	pthread_mutex_unlock(&dump_lock);
	return rc;
}

static void dump_child(void)
{
	pthread_mutex_init(&dump_lock, NULL);
}

HZ_EXPORT int hz_stats_dump(const char *path, const char *format)
{
	int f = format ? parse_format(format) : report_format;
	if (f < 0) {
		errno = EINVAL;
		return -1;
	}
	return dump(path ? path : report_path[0] ? report_path : "stderr", f);
}

/* HUGEZERO_STATS_INTERVAL_MS: a thread of its own, started only when
 * asked for, rewrites the report at that interval. */
static void *interval_main(void *arg)
{
	uint64_t ms = (uint64_t)(uintptr_t)arg;
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
	for (;;) {
		while (nanosleep(&ts, NULL) && errno == EINTR)
			;
		dump(report_path, report_format);
	}
	return NULL;
}

/* At exit: a preloaded library's destructors run after the program's.
 * The lock stays held: the interval thread, if any, writes no more, so
 * the process's end cannot cut a rewrite of the final report short. */
__attribute__((destructor)) static void hz_stats_at_exit(void)
{
	if (!report_path[0])
		return;
	int saved = errno;
	pthread_mutex_lock(&dump_lock);
	if (dump_locked(report_path, report_format))
		hz_log("cannot write the report to ", report_path, "");
	errno = saved;
}
