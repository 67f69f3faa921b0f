/* The report in Prometheus's text exposition format (emit.h): a pid label
 * on every sample, so a node exporter's textfile collector can gather a
 * fleet's files; each family's samples together. */
#include <stdio.h>
#include <string.h>

#include "../os/os.h"
#include "ab.h"
#include "callsites.h"
#include "emit.h"

void hz_prom_name(char *out, size_t size, const char *name, int gauge)
{
	size_t n = (size_t)snprintf(out, size, "hugezero_%s", name);
	for (char *c = out; *c; c++)
		if (*c == '.')
			*c = '_';
	if (!gauge && n + 6 < size)
		strcat(out, "_total");
}

static void begin(struct hz_out *o)
{
	(void)o;
}

static void counter(struct hz_out *o, const char *name, uint64_t value, int gauge)
{
	char pn[128];
	hz_prom_name(pn, sizeof pn, name, gauge);
	hz_out_put(o, "# HELP %s hugezero's %s.\n# TYPE %s %s\n%s{pid=\"%d\"} %llu\n", pn, name, pn,
		   gauge ? "gauge" : "counter", pn, hz_os_pid(), (unsigned long long)value);
}

static void classes(struct hz_out *o, const struct hz_tstats *t)
{
	static const char *const what[2] = {"calls", "bytes"};
	int pid = hz_os_pid();
	for (int w = 0; w < 2; w++) {
		hz_out_put(o, "# HELP hugezero_%s_total %s by operation and size class (the class's "
			      "smallest size, in bytes; memset from 16 KiB).\n"
			      "# TYPE hugezero_%s_total counter\n",
			   what[w], w ? "Bytes" : "Calls", what[w]);
		for (int op = 0; op < HZ_OPS; op++)
			for (int k = 0; k < HZ_CLASSES; k++)
				if (t->calls[op][k])
					hz_out_put(o, "hugezero_%s_total{pid=\"%d\",op=\"%s\",class=\"%llu\"} %llu\n",
						   what[w], pid, hz_op_names[op], (unsigned long long)hz_class_min(k),
						   (unsigned long long)(w ? t->bytes[op][k] : t->calls[op][k]));
	}
}

/* The arms in two passes, each family's samples together: pass 0 the
 * latency histograms, pass 1 the B/A ratios. */
struct ab_pass {
	struct hz_out *o;
	int pass;
};

static void ab_hist(struct hz_out *o, const char *labels, const struct hz_ab_cell *c, const uint64_t *h)
{
	uint64_t cum = 0;
	for (int b = 0; b < HZ_AB_BUCKETS; b++) {
		cum += h[b];
		if (h[b] || b + 1 == HZ_AB_BUCKETS)
			hz_out_put(o, "hugezero_ab_duration_seconds_bucket{%s,le=\"%.9g\"} %llu\n", labels,
				   (b + 1 < HZ_AB_BUCKETS ? hz_ab_bucket_ns(b + 1) : hz_ab_bucket_ns(b) * 2) / 1e9,
				   (unsigned long long)cum);
	}
	hz_out_put(o, "hugezero_ab_duration_seconds_bucket{%s,le=\"+Inf\"} %llu\n", labels,
		   (unsigned long long)cum);
	hz_out_put(o, "hugezero_ab_duration_seconds_sum{%s} %.9g\n", labels, c->ns / 1e9);
	hz_out_put(o, "hugezero_ab_duration_seconds_count{%s} %llu\n", labels,
		   (unsigned long long)c->calls);
}

static void ab_cell(void *arg, int op, int k, const struct hz_ab_cell *a, const struct hz_ab_cell *b,
		    const uint64_t *ha, const uint64_t *hb)
{
	struct ab_pass *p = arg;
	const char *name = hz_ab_op_names[op];
	unsigned long long lo = hz_class_min(k);
	int pid = hz_os_pid();
	if (p->pass == 0) {
		char labels[160];
		snprintf(labels, sizeof labels, "pid=\"%d\",op=\"%s\",class=\"%llu\",arm=\"A\"", pid, name, lo);
		ab_hist(p->o, labels, a, ha);
		snprintf(labels, sizeof labels, "pid=\"%d\",op=\"%s\",class=\"%llu\",arm=\"B\"", pid, name, lo);
		ab_hist(p->o, labels, b, hb);
		return;
	}
	struct hz_ab_result r;
	hz_ab_compare(a, b, &r);
	if (r.ratio <= 0) /* no ratio below 2 calls an arm */
		return;
	const char *bound[3] = {"mean", "lo95", "hi95"};
	const double v[3] = {r.ratio, r.lo, r.hi};
	for (int i = 0; i < 3; i++)
		hz_out_put(p->o, "hugezero_ab_ratio{pid=\"%d\",op=\"%s\",class=\"%llu\",bound=\"%s\"} %.6f\n",
			   pid, name, lo, bound[i], v[i]);
}

static void ab(struct hz_out *o)
{
	struct ab_pass p = {o, 0};
	hz_out_put(o, "# HELP hugezero_ab_duration_seconds Time of calls by arm (A: glibc's way, B: "
		      "hugezero's), operation and size class.\n"
		      "# TYPE hugezero_ab_duration_seconds histogram\n");
	hz_ab_each(ab_cell, &p);
	hz_out_put(o, "# HELP hugezero_ab_ratio B/A ratio of mean times and its 95%% interval.\n"
		      "# TYPE hugezero_ab_ratio gauge\n");
	p.pass = 1;
	hz_ab_each(ab_cell, &p);
}

static void site(void *arg, unsigned rank, uint64_t calls, uint64_t bytes,
		 const struct hz_site_frame *f, int n)
{
	struct hz_out *o = arg;
	char where[160];
	(void)calls;
	snprintf(where, sizeof where, "%s+0x%lx", n && f[0].function ? f[0].function : "?",
		 n ? (unsigned long)f[0].offset : 0ul);
	hz_out_put(o, "hugezero_callsite_bytes_total{pid=\"%d\",rank=\"%u\",site=", hz_os_pid(), rank);
	hz_out_str(o, where);
	hz_out_put(o, "} %llu\n", (unsigned long long)bytes);
}

static void callsites(struct hz_out *o)
{
	unsigned period;
	hz_out_put(o, "# HELP hugezero_callsite_bytes_total Bytes cleared by large memset and calloc "
		      "calls from the top call sites (estimated from samples).\n"
		      "# TYPE hugezero_callsite_bytes_total counter\n");
	hz_callsites_each(site, o, 10, &period);
}

static void end(struct hz_out *o)
{
	(void)o;
}

const struct hz_emitter hz_emit_prom = {"prometheus", begin, counter, classes, ab, callsites, end};
