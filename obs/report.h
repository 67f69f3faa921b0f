/* The report: every figure (obs.h), the size classes, the arms and the
 * call sites, in one format (emit.h), to stderr or to a private file per
 * process. */
#ifndef HZ_REPORT_H
#define HZ_REPORT_H

#include <stdint.h>

#include "../arch/common.h"
#include "emit.h"
#include "obs.h"

#pragma GCC visibility push(hidden)

/* What hz_report_setup could not do (and left out). */
enum {
	HZ_REPORT_BAD_FORMAT = 1, /* an unknown format: text is used */
	HZ_REPORT_NO_CWD = 2,     /* a relative path and no current directory: no report */
	HZ_REPORT_TOO_LONG = 4,   /* the path is too long: no report */
	HZ_REPORT_BAD_LABELS = 16, /* labels not name=value,...: none are added */
};
/* Sets the report up: at exit to path ("stderr", or a file: "%p" in it
 * becomes the pid, the first one only, otherwise ".PID" is appended, or
 * inserted before a final ".prom" (a textfile collector reads only those),
 * so each process of a forking server writes its own; a relative path is
 * taken from the current directory now, since servers change directory
 * and overwrite their environment), in format (NULL: text), and every
 * interval_ms (0: never) by whoever runs the interval. Each write to a
 * file replaces it whole: a temporary file beside it ("NAME.tmp"),
 * renamed over it. In the Prometheus format with an interval, the file is
 * removed at exit instead (the process's series end with it), and is made
 * readable by others (mode 0644: a node exporter runs as its own user);
 * labels ("name=value,...", NULL: none) go on each of its samples. At
 * initialisation. Returns the HZ_REPORT_* bits of what it could not do. */
int hz_report_setup(const char *path, const char *format, uint64_t interval_ms, const char *labels);
/* The path set up ("" for none) and the interval (0: none). */
const char *hz_report_path(void);
uint64_t hz_report_interval(void);

/* obs/ calls no room above it: a walk over every figure is its caller's,
 * who calls the head, then each room's own source with the same fn (the
 * allocator's hz_large_counters, ...), then the tail. */
/* The engine's counters, first. */
void hz_obs_head(hz_counter_fn fn, void *arg);
/* The arms' drops, then the process's memory (RSS, peak RSS, transparent
 * huge pages mapped), last. */
void hz_obs_tail(hz_counter_fn fn, void *arg);
/* A figure looked for by name in such a walk: hz_obs_find_figure as its
 * fn, a struct hz_obs_find as its arg; found and value after it. */
struct hz_obs_find {
	const char *name;
	uint64_t value;
	int found;
};
void hz_obs_find_figure(void *arg, const char *name, uint64_t value, int gauge);

/* One report, written by its caller in three steps, so that obs/ calls no
 * room above it: begin (the report's lock taken, the engine's figures
 * written), then every other room's figures, each through
 * hz_report_figure, then hz_report_end (obs/'s own figures, the size
 * classes, the arms and the call sites; the file renamed into place, the
 * lock released). One report is written at a time; the one at exit is
 * the last. */
struct hz_report {
	struct hz_out o;
	int kind; /* 0: on demand, 1: the interval's, 2: the exit's */
	char name[4128], tmp[4128]; /* the file and its temporary; "" for stderr */
};
/* On demand, to path (NULL: the one set up, else stderr), in format
 * (NULL: the one set up). 0, or -1 with errno (EINVAL for an unknown
 * format), the lock then not held. */
int hz_report_begin(struct hz_report *r, const char *path, const char *format);
/* The interval's: to the path set up; after it is written, in the
 * Prometheus format, the files of processes gone are swept
 * (report.swept_files). 0, or -1 with errno. */
int hz_report_begin_interval(struct hz_report *r);
/* At exit: 1 when there is nothing to write (no report, or a collector's
 * file, which is removed: the process's series end with it); else as
 * hz_report_begin. The lock is never released: an interval's writer
 * waits, so the process's end cannot cut a rewrite short. */
int hz_report_begin_exit(struct hz_report *r);
/* One figure of the report r (an hz_counter_fn). */
void hz_report_figure(void *r, const char *name, uint64_t value, int gauge);
/* 0, or -1 with errno. */
int hz_report_end(struct hz_report *r);

/* fork (hz_obs_fork_child): the child's report lock, unlocked. */
void hz_report_fork_child(void);
/* fork, last in the child (hz_obs_fork_child_ready): when the parent had
 * an interval, the child's own is due. Its thread is not started there (a
 * child that calls unshare or execs must stay single-threaded, and other
 * libraries' child handlers have not run yet) but at the child's first
 * large call once it has lived an interval: whoever runs the interval
 * tests hz_report_child_pending there, then hz_report_child_due (1 once,
 * when the interval has passed). */
void hz_report_fork_child_ready(void);
extern int hz_report_child_pending;
int hz_report_child_due(void);

#pragma GCC visibility pop

#endif
