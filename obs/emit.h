/* The report's formats: one emitter each (text, JSON, Prometheus text
 * exposition) behind one interface, writing through a stack buffer that
 * report.c flushes with write(2). Nothing here allocates. */
#ifndef HZ_EMIT_H
#define HZ_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"
#include "counters.h"

#pragma GCC visibility push(hidden)

struct hz_emitter;

struct hz_out {
	const struct hz_emitter *e;
	int fd;
	int error; /* 0, or the errno value of the first write that failed */
	unsigned n; /* items written so far in the current list (JSON commas) */
	size_t len;
	char buf[2048];
};

/* Appends printf-style text (one piece of at most 1023 bytes). */
void hz_out_put(struct hz_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a quoted string, quotes and backslashes escaped, cut to
 * 196 bytes. */
void hz_out_str(struct hz_out *o, const char *s);
/* Writes what is buffered; a failure is kept in o->error. */
void hz_out_flush(struct hz_out *o);

/* A report is begin, one counter call per figure (obs.h), classes, then
 * ab when the arms ran and callsites when stacks were sampled, then end. */
struct hz_emitter {
	const char *name;
	void (*begin)(struct hz_out *o);
	void (*counter)(struct hz_out *o, const char *name, uint64_t value, int gauge);
	void (*classes)(struct hz_out *o, const struct hz_tstats *t);
	void (*ab)(struct hz_out *o);
	void (*callsites)(struct hz_out *o);
	void (*end)(struct hz_out *o);
};
extern const struct hz_emitter hz_emit_text, hz_emit_json, hz_emit_prom;

/* The Prometheus name of a figure: hugezero_ and the name, dots as
 * underscores, a final _ns as _seconds, a running total ending in
 * _total. 1 when the figure is in nanoseconds (written in seconds). */
int hz_prom_name(char *out, size_t size, const char *name, int gauge);
/* The labels on every sample of the Prometheus format, from
 * "name=value,..." (no comma in a value; quotes, backslashes and newlines
 * escaped): 0, or -1, leaving the labels as they were, when a name is not
 * a label name, is given twice or is one the report or Prometheus uses
 * (pid, op, class, arm, le, bound, rank, site, job, instance), a value is
 * not UTF-8, or the whole is over 500 bytes. At setup. */
int hz_prom_labels(const char *spec);

#pragma GCC visibility pop

#endif
