/* The report as text: the process's mode ("mode on" or "mode off"),
 * then one "name value" line per figure (emit.c). */
#include "obs.h"

static void begin(struct hz_out *o)
{
	hz_out_put(o, "mode %s\n", hz_report_mode());
}

static void counter(struct hz_out *o, const char *name, uint64_t value, int gauge)
{
	(void)gauge;
	hz_out_put(o, "%s %llu\n", name, (unsigned long long)value);
}

static void classes(struct hz_out *o, const struct hz_tstats *t)
{
	for (int op = 0; op < HZ_OPS; op++)
		for (int k = 0; k < HZ_CLASSES; k++) {
			if (!t->calls[op][k])
				continue;
			unsigned long long lo = hz_class_min(k);
			hz_out_put(o, "%s.class.%llu.calls %llu\n%s.class.%llu.bytes %llu\n", hz_op_names[op],
				   lo, (unsigned long long)t->calls[op][k], hz_op_names[op], lo,
				   (unsigned long long)t->bytes[op][k]);
		}
}

static void ab_cell(void *arg, int op, int k, const struct hz_ab_cell *a, const struct hz_ab_cell *b,
		    const uint64_t *ha, const uint64_t *hb)
{
	struct hz_out *o = arg;
	struct hz_ab_result r;
	hz_ab_compare(a, b, &r);
	const struct hz_ab_cell *cell[2] = {a, b};
	const uint64_t *hist[2] = {ha, hb};
	hz_out_put(o, "ab %s from %llu:", hz_ab_op_names[op], (unsigned long long)hz_class_min(k));
	for (int i = 0; i < 2; i++) {
		double mean = cell[i]->calls ? cell[i]->ns / (double)cell[i]->calls : 0;
		hz_out_put(o, " %s %llu calls mean %.0f ns p50 %.0f p90 %.0f p99 %.0f %.2f GB/s;",
			   i ? "B" : "A", (unsigned long long)cell[i]->calls, mean,
			   hz_ab_quantile(hist[i], 0.5), hz_ab_quantile(hist[i], 0.9),
			   hz_ab_quantile(hist[i], 0.99),
			   cell[i]->ns > 0 ? (double)cell[i]->bytes / cell[i]->ns : 0);
	}
	hz_out_put(o, " B/A %.3f [%.3f, %.3f]: %s\n", r.ratio, r.lo, r.hi, r.verdict);
}

static void ab(struct hz_out *o)
{
	struct hz_ab_cursor c;
	hz_ab_begin(&c);
	while (hz_ab_next(&c))
		ab_cell(o, c.op, c.cls, &c.a, &c.b, c.hist_a, c.hist_b);
}

static void site(void *arg, unsigned rank, uint64_t calls, uint64_t bytes,
		 const struct hz_site_frame *f, int n)
{
	struct hz_out *o = arg;
	hz_out_put(o, "callsite %u: about %llu calls, %llu bytes\n", rank, (unsigned long long)calls,
		   (unsigned long long)bytes);
	for (int i = 0; i < n; i++)
		hz_out_put(o, "  %.200s+0x%lx (%.300s +0x%lx build-id %s)\n",
			   f[i].function ? f[i].function : "?", (unsigned long)f[i].offset, f[i].module,
			   (unsigned long)f[i].module_offset, f[i].build_id[0] ? f[i].build_id : "none");
}

static void callsites(struct hz_out *o)
{
	struct hz_site_cursor c;
	hz_callsites_begin(&c, 10);
	while (hz_callsites_next(&c))
		site(o, c.rank, c.calls, c.bytes, c.frames, c.nframes);
}

static void end(struct hz_out *o)
{
	(void)o;
}

const struct hz_emitter hz_emit_text = {"text", begin, counter, classes, ab, callsites, end};
