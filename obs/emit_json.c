/* The report as one JSON object (emit.c): "pid", "mode", "counters",
 * "classes", then "ab" and "callsites" when they ran. */
#include "../os/os.h"
#include "obs.h"

static const char *comma(struct hz_out *o)
{
	return o->n++ ? "," : "";
}

static void begin(struct hz_out *o)
{
	hz_out_put(o, "{\n  \"pid\": %d,\n  \"mode\": \"%s\",\n  \"counters\": {", hz_os_pid(),
		   hz_report_mode());
	o->n = 0;
}

static void counter(struct hz_out *o, const char *name, uint64_t value, int gauge)
{
	(void)gauge;
	hz_out_put(o, "%s\n    \"%s\": %llu", comma(o), name, (unsigned long long)value);
}

static void classes(struct hz_out *o, const struct hz_tstats *t)
{
	hz_out_put(o, "\n  },\n  \"classes\": {");
	for (int op = 0; op < HZ_OPS; op++) {
		hz_out_put(o, "%s\n    \"%s\": [", op ? "," : "", hz_op_names[op]);
		const char *sep = "";
		for (int k = 0; k < HZ_CLASSES; k++) {
			if (!t->calls[op][k])
				continue;
			hz_out_put(o, "%s{\"min\": %llu, \"calls\": %llu, \"bytes\": %llu}", sep,
				   (unsigned long long)hz_class_min(k), (unsigned long long)t->calls[op][k],
				   (unsigned long long)t->bytes[op][k]);
			sep = ", ";
		}
		hz_out_put(o, "]");
	}
	hz_out_put(o, "\n  }");
}

static void ab_cell(void *arg, int op, int k, const struct hz_ab_cell *a, const struct hz_ab_cell *b,
		    const uint64_t *ha, const uint64_t *hb)
{
	struct hz_out *o = arg;
	struct hz_ab_result r;
	hz_ab_compare(a, b, &r);
	const struct hz_ab_cell *cell[2] = {a, b};
	const uint64_t *hist[2] = {ha, hb};
	hz_out_put(o, "%s\n    {\"op\": \"%s\", \"min\": %llu, ", comma(o), hz_ab_op_names[op],
		   (unsigned long long)hz_class_min(k));
	for (int i = 0; i < 2; i++) {
		hz_out_put(o, "\"%s\": {\"calls\": %llu, \"bytes\": %llu, \"ns\": %.0f, \"ns2\": %.17g, "
			      "\"p50_ns\": %.0f, \"p90_ns\": %.0f, \"p99_ns\": %.0f, \"hist\": [",
			   i ? "B" : "A", (unsigned long long)cell[i]->calls,
			   (unsigned long long)cell[i]->bytes, cell[i]->ns, cell[i]->ns2,
			   hz_ab_quantile(hist[i], 0.5), hz_ab_quantile(hist[i], 0.9),
			   hz_ab_quantile(hist[i], 0.99));
		const char *sep = "";
		for (int h = 0; h < HZ_AB_BUCKETS; h++)
			if (hist[i][h]) {
				hz_out_put(o, "%s[%.0f, %llu]", sep, hz_ab_bucket_ns(h),
					   (unsigned long long)hist[i][h]);
				sep = ", ";
			}
		hz_out_put(o, "]}, ");
	}
	hz_out_put(o, "\"ratio\": %.6f, \"lo\": %.6f, \"hi\": %.6f, \"verdict\": \"%s\"}", r.ratio, r.lo,
		   r.hi, r.verdict);
}

static void ab(struct hz_out *o)
{
	hz_out_put(o, ",\n  \"ab\": [");
	o->n = 0;
	struct hz_ab_cursor c;
	hz_ab_begin(&c);
	while (hz_ab_next(&c))
		ab_cell(o, c.op, c.cls, &c.a, &c.b, c.hist_a, c.hist_b);
	hz_out_put(o, "\n  ]");
}

static void site(void *arg, unsigned rank, uint64_t calls, uint64_t bytes,
		 const struct hz_site_frame *f, int n)
{
	struct hz_out *o = arg;
	hz_out_put(o, "%s\n    {\"rank\": %u, \"calls\": %llu, \"bytes\": %llu, \"frames\": [",
		   rank > 1 ? "," : "", rank, (unsigned long long)calls, (unsigned long long)bytes);
	for (int i = 0; i < n; i++) {
		hz_out_put(o, "%s{\"function\": ", i ? ", " : "");
		hz_out_str(o, f[i].function ? f[i].function : "");
		hz_out_put(o, ", \"offset\": %lu, \"module\": ", (unsigned long)f[i].offset);
		hz_out_str(o, f[i].module);
		hz_out_put(o, ", \"module_offset\": %lu, \"build_id\": \"%s\"}",
			   (unsigned long)f[i].module_offset, f[i].build_id);
	}
	hz_out_put(o, "]}");
}

static void callsites(struct hz_out *o)
{
	struct hz_site_cursor c;
	hz_out_put(o, ",\n  \"callsites\": [");
	hz_callsites_begin(&c, 10);
	while (hz_callsites_next(&c))
		site(o, c.rank, c.calls, c.bytes, c.frames, c.nframes);
	hz_out_put(o, "\n  ],\n  \"callsites_period\": %u", c.period);
}

static void end(struct hz_out *o)
{
	hz_out_put(o, "\n}\n");
}

const struct hz_emitter hz_emit_json = {"json", begin, counter, classes, ab, callsites, end};
