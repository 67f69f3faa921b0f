/* The report in Prometheus's text exposition format (emit.c), as a node
 * exporter's textfile collector reads it: pid and mode labels and the
 * user's labels on every sample, each family's samples together, counters named
 * _total, times in seconds, the arms' latencies as histograms whose
 * buckets are the same in every process (so a fleet's can be summed). */
#include <stdio.h>
#include <string.h>

#include "../os/os.h"
#include "obs.h"

int hz_prom_name(char *out, size_t size, const char *name, int gauge)
{
	size_t len = strlen(name);
	int ns = len > 3 && !strcmp(name + len - 3, "_ns");
	size_t n = (size_t)snprintf(out, size, "hugezero_%.*s%s", (int)(len - (ns ? 3 : 0)), name,
				    ns ? "_seconds" : "");
	for (char *c = out; *c; c++)
		if (*c == '.')
			*c = '_';
	if (!gauge && n + 6 < size)
		strcat(out, "_total");
	return ns;
}

/* ---- the labels every sample carries ---- */

/* The user's labels as ,name="value"... (hz_prom_labels), and this
 * report's pid="N",mode="on|off" and those (begin). One report is written
 * at a time. */
static char user_labels[512];
static char base[sizeof user_labels + 48];

/* Labels the report's own samples or Prometheus's targets carry. */
static const char *const reserved[] = {"pid", "mode", "op", "class", "arm", "le", "bound", "rank",
				       "site", "job", "instance"};

static int label_name_ok(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9') || (n >= 2 && s[0] == '_' && s[1] == '_'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		if (strlen(reserved[i]) == n && !memcmp(reserved[i], s, n))
			return 0;
	return 1;
}

/* Whether s[0..n) is valid UTF-8 (Prometheus's label values are):
 * no overlong forms, surrogates or code points above U+10FFFF. */
static int utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], len = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3
			: c >= 0xF0 && c < 0xF5 ? 4 : 0;
		if (!len || i + len > n)
			return 0;
		for (unsigned k = 1; k < len; k++)
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
		if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0) ||
		    (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90))
			return 0;
		i += len;
	}
	return 1;
}

/* Whether name (n bytes) is already in the labels out[0..len). */
static int label_seen(const char *out, size_t len, const char *name, size_t n)
{
	for (const char *p = out; p < out + len; p++)
		if (*p == ',' && (size_t)(out + len - p) > n + 1 && !memcmp(p + 1, name, n) && p[n + 1] == '=')
			return 1;
	return 0;
}

int hz_prom_labels(const char *spec)
{
	char out[sizeof user_labels];
	size_t len = 0;
	for (const char *p = spec; *p;) {
		size_t item = strcspn(p, ","), name = strcspn(p, "=");
		if (name >= item || !label_name_ok(p, name) || label_seen(out, len, p, name) ||
		    !utf8_ok((const unsigned char *)p + name + 1, item - name - 1))
			return -1;
		if (len + name + 4 >= sizeof out)
			return -1;
		out[len++] = ',';
		memcpy(out + len, p, name);
		len += name;
		out[len++] = '=';
		out[len++] = '"';
		for (size_t i = name + 1; i < item; i++) {
			char c = p[i] == '\n' ? 'n' : p[i];
			if (len + 4 >= sizeof out)
				return -1;
			if (c != p[i] || c == '"' || c == '\\')
				out[len++] = '\\';
			out[len++] = c;
		}
		out[len++] = '"';
		p += item + (p[item] == ',');
	}
	out[len] = 0;
	memcpy(user_labels, out, len + 1);
	return 0;
}

static void begin(struct hz_out *o)
{
	(void)o;
	snprintf(base, sizeof base, "pid=\"%d\",mode=\"%s\"%s", hz_os_pid(), hz_report_mode(), user_labels);
}

static void counter(struct hz_out *o, const char *name, uint64_t value, int gauge)
{
	char pn[128];
	int ns = hz_prom_name(pn, sizeof pn, name, gauge);
	hz_out_put(o, "# HELP %s hugezero's %s%s.\n# TYPE %s %s\n", pn, name, ns ? " (in seconds)" : "",
		   pn, gauge ? "gauge" : "counter");
	if (ns)
		hz_out_put(o, "%s{%s} %.9f\n", pn, base, (double)value / 1e9);
	else
		hz_out_put(o, "%s{%s} %llu\n", pn, base, (unsigned long long)value);
}

static void classes(struct hz_out *o, const struct hz_tstats *t)
{
	static const char *const what[2] = {"calls", "bytes"};
	for (int w = 0; w < 2; w++) {
		hz_out_put(o, "# HELP hugezero_%s_total %s by operation and size class (the class's "
			      "smallest size, in bytes; memset from 16 KiB).\n"
			      "# TYPE hugezero_%s_total counter\n",
			   what[w], w ? "Bytes" : "Calls", what[w]);
		for (int op = 0; op < HZ_OPS; op++)
			for (int k = 0; k < HZ_CLASSES; k++)
				if (t->calls[op][k])
					hz_out_put(o, "hugezero_%s_total{%s,op=\"%s\",class=\"%llu\"} %llu\n",
						   what[w], base, hz_op_names[op], (unsigned long long)hz_class_min(k),
						   (unsigned long long)(w ? t->bytes[op][k] : t->calls[op][k]));
	}
}

/* ---- the arms ----
 * One copy of the cells, then each family's samples together from it, so
 * a cell's _sum, _count, squares and bytes are of one moment. */
enum { PASS_HIST, PASS_SQUARED, PASS_BYTES, PASS_RATIO, PASSES };

static const char *const families[PASSES] = {
	"# HELP hugezero_ab_duration_seconds Time of calls by arm (A: glibc's way, B: hugezero's), "
	"operation and size class.\n# TYPE hugezero_ab_duration_seconds histogram\n",
	"# HELP hugezero_ab_duration_seconds_squared_total Sum of the squares of the calls' times "
	"(seconds squared), for their variance.\n# TYPE hugezero_ab_duration_seconds_squared_total "
	"counter\n",
	"# HELP hugezero_ab_bytes_total Bytes of the arms' calls.\n"
	"# TYPE hugezero_ab_bytes_total counter\n",
	"# HELP hugezero_ab_ratio B/A ratio of mean times and its 95% interval.\n"
	"# TYPE hugezero_ab_ratio gauge\n",
};

/* The histogram's buckets: an octave each, le = 2^HIST_LE_LO ns up to
 * 2^(HIST_LE_LO + HZ_AB_H_MAJ - 1) ns, each the upper end of one of the
 * arms' major buckets (ab.c), so the counts are exact; then +Inf. The
 * same set in every process, so a fleet's can be summed by le. */
#define HIST_LE_LO (HZ_AB_H_LO + 1)

struct ab_copy {
	int op, k;
	struct hz_ab_cell arm[2];
	uint64_t cum[2][HZ_AB_H_MAJ]; /* calls up to each octave's end */
};
/* One report at a time (report.c's lock); mapped at the first report
 * with the arms on (74 KiB), touched only for cells in use. */
#define COPIES (HZ_AB_OPS * HZ_CLASSES)
static struct ab_copy *copies;
static unsigned ncopies;

static void copy_cell(void *arg, int op, int k, const struct hz_ab_cell *a, const struct hz_ab_cell *b,
		      const uint64_t *ha, const uint64_t *hb)
{
	(void)arg;
	if (ncopies == COPIES)
		return;
	struct ab_copy *c = &copies[ncopies++];
	c->op = op;
	c->k = k;
	c->arm[0] = *a;
	c->arm[1] = *b;
	for (int arm = 0; arm < 2; arm++) {
		const uint64_t *h = arm ? hb : ha;
		uint64_t cum = 0;
		for (int maj = 0; maj < HZ_AB_H_MAJ; maj++) {
			for (int s = 0; s < HZ_AB_H_SUB; s++)
				cum += h[maj * HZ_AB_H_SUB + s];
			c->cum[arm][maj] = cum;
		}
	}
}

static void ab_hist(struct hz_out *o, const char *labels, const struct hz_ab_cell *c, const uint64_t *cum)
{
	for (int maj = 0; maj < HZ_AB_H_MAJ; maj++) /* 2^k ns in seconds, exactly in 12 digits */
		hz_out_put(o, "hugezero_ab_duration_seconds_bucket{%s,le=\"%.12g\"} %llu\n", labels,
			   (double)((uint64_t)1 << (HIST_LE_LO + maj)) / 1e9, (unsigned long long)cum[maj]);
	hz_out_put(o, "hugezero_ab_duration_seconds_bucket{%s,le=\"+Inf\"} %llu\n", labels,
		   (unsigned long long)c->calls);
	hz_out_put(o, "hugezero_ab_duration_seconds_sum{%s} %.17g\n", labels, c->ns / 1e9);
	hz_out_put(o, "hugezero_ab_duration_seconds_count{%s} %llu\n", labels,
		   (unsigned long long)c->calls);
}

static void ab_family(struct hz_out *o, int pass, const struct ab_copy *c)
{
	char labels[sizeof base + 96];
	int n = snprintf(labels, sizeof labels, "%s,op=\"%s\",class=\"%llu\"", base, hz_ab_op_names[c->op],
			 (unsigned long long)hz_class_min(c->k));
	if (pass == PASS_RATIO) {
		struct hz_ab_result r;
		hz_ab_compare(&c->arm[0], &c->arm[1], &r);
		if (r.ratio <= 0) /* no ratio below 2 calls an arm */
			return;
		const char *bound[3] = {"mean", "lo95", "hi95"};
		const double v[3] = {r.ratio, r.lo, r.hi};
		for (int i = 0; i < 3; i++)
			hz_out_put(o, "hugezero_ab_ratio{%s,bound=\"%s\"} %.6f\n", labels, bound[i], v[i]);
		return;
	}
	for (int arm = 0; arm < 2; arm++) {
		const struct hz_ab_cell *a = &c->arm[arm];
		snprintf(labels + n, sizeof labels - (size_t)n, ",arm=\"%c\"", arm ? 'B' : 'A');
		if (pass == PASS_HIST)
			ab_hist(o, labels, a, c->cum[arm]);
		else if (pass == PASS_SQUARED)
			hz_out_put(o, "hugezero_ab_duration_seconds_squared_total{%s} %.17g\n", labels,
				   a->ns2 / 1e18);
		else
			hz_out_put(o, "hugezero_ab_bytes_total{%s} %llu\n", labels,
				   (unsigned long long)a->bytes);
	}
}

static void ab(struct hz_out *o)
{
	void *m;
	ncopies = 0;
	if (!copies && hz_ab_on && !hz_os_map(hz_round_up(COPIES * sizeof *copies, hz_page_size), hz_page_size, &m))
		copies = m;
	struct hz_ab_cursor c;
	hz_ab_begin(&c);
	while (copies && hz_ab_next(&c))
		copy_cell(NULL, c.op, c.cls, &c.a, &c.b, c.hist_a, c.hist_b);
	for (int pass = 0; pass < PASSES; pass++) {
		hz_out_put(o, "%s", families[pass]);
		for (unsigned i = 0; i < ncopies; i++)
			ab_family(o, pass, &copies[i]);
	}
}

/* ---- call sites ---- */

static void site(void *arg, unsigned rank, uint64_t calls, uint64_t bytes,
		 const struct hz_site_frame *f, int n)
{
	struct hz_out *o = arg;
	char where[160];
	(void)calls;
	snprintf(where, sizeof where, "%s+0x%lx", n && f[0].function ? f[0].function : "?",
		 n ? (unsigned long)f[0].offset : 0ul);
	hz_out_put(o, "hugezero_callsite_bytes_total{%s,rank=\"%u\",site=", base, rank);
	hz_out_str(o, where);
	hz_out_put(o, "} %llu\n", (unsigned long long)bytes);
}

static void callsites(struct hz_out *o)
{
	struct hz_site_cursor c;
	hz_out_put(o, "# HELP hugezero_callsite_bytes_total Bytes of large blocks and memsets "
		      "from the top call sites (estimated from samples).\n"
		      "# TYPE hugezero_callsite_bytes_total counter\n");
	hz_callsites_begin(&c, 10);
	while (hz_callsites_next(&c))
		site(o, c.rank, c.calls, c.bytes, c.frames, c.nframes);
}

static void end(struct hz_out *o)
{
	(void)o;
}

const struct hz_emitter hz_emit_prom = {"prometheus", begin, counter, classes, ab, callsites, end};
