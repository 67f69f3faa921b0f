/* The report: every figure (obs.h), the size classes, the arms and the
 * call sites, in one format (emit.h), to stderr or to a private file per
 * process. One report is written at a time (the interval thread,
 * hz_report_dump, the exit), and the one at exit is the last. */
#ifndef HZ_REPORT_H
#define HZ_REPORT_H

#include <stdint.h>

#include "../arch/common.h"
#include "obs.h"

#pragma GCC visibility push(hidden)

/* What hz_report_setup could not do (and left out). */
enum {
	HZ_REPORT_BAD_FORMAT = 1, /* an unknown format: text is used */
	HZ_REPORT_NO_CWD = 2,     /* a relative path and no current directory: no report */
	HZ_REPORT_TOO_LONG = 4,   /* the path is too long: no report */
	HZ_REPORT_NO_THREAD = 8,  /* the interval's thread could not start */
	HZ_REPORT_BAD_LABELS = 16, /* labels not name=value,...: none are added */
};
/* Writes the report at exit to path ("stderr", or a file: "%p" in it
 * becomes the pid, the first one only, otherwise ".PID" is appended, or
 * inserted before a final ".prom" (a textfile collector reads only those),
 * so each process of a forking server writes its own; a relative path is
 * taken from the current directory now, since servers change directory
 * and overwrite their environment), in format (NULL: text), and every
 * interval_ms from a thread started only then (0: never). Each write to
 * a file replaces it whole: a temporary file beside it ("NAME.tmp"),
 * renamed over it. In the Prometheus format with an interval, the file is
 * removed at exit instead (the process's series end with it), and is made
 * readable by others (mode 0644: a node exporter runs as its own user);
 * labels ("name=value,...", NULL: none) go on each of its samples. At
 * initialisation. Returns the HZ_REPORT_* bits of what it could not do. */
int hz_report_setup(const char *path, const char *format, uint64_t interval_ms, const char *labels);
/* Writes the report now: to path (NULL: the one set up, else stderr), in
 * format (NULL: the one set up). 0, or -1 with errno (EINVAL for an
 * unknown format). */
int hz_report_dump(const char *path, const char *format);
/* The report's own figure, a source of the report (hz_obs_add_source):
 * report.swept_files, the files of processes gone that the interval's
 * writes removed from the collector's directory. */
void hz_report_counters(hz_counter_fn fn, void *arg);
/* fork (hz_obs_fork_child): the child's report lock, unlocked. */
void hz_report_fork_child(void);
/* fork, last in the child (hz_obs_fork_child_ready): when the parent had
 * an interval thread, the child's own is due. It is not started there (a
 * child that calls unshare or execs must stay single-threaded, and other
 * libraries' child handlers have not run yet) but by the child's first
 * large call once it has lived an interval (hz_report_child_check). */
void hz_report_fork_child_ready(void);
extern int hz_report_child_pending;
HZ_NOINLINE void hz_report_child_tick(void);
/* On the large paths (a load and a branch): starts a forked child's
 * interval thread when it is due. */
static inline void hz_report_child_check(void)
{
	if (hz_unlikely(__atomic_load_n(&hz_report_child_pending, __ATOMIC_RELAXED)))
		hz_report_child_tick();
}

#pragma GCC visibility pop

#endif
