/* obs/obs.h: observability's one header, its files' functions bottom-up,
 * one section a file (docs/layers.txt): the counters (calls and bytes per
 * operation and size class, per thread; what each kernel cleared), the
 * per-call A/B arms and their statistics, call-site sampling, the
 * emitters, the report (written by its caller: obs/ calls no room above
 * it), fork. It counts and reports, and decides nothing. */
#ifndef HZ_OBS_OBS_H
#define HZ_OBS_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "../arch/common.h"
#include "../arch/arch.h"

#pragma GCC visibility push(hidden)

/* ---- obs: the figures' type ---- */
/* One named figure: gauge is 1 for a state (bytes in use), 0 for a running
 * total (calls so far). */
typedef void (*hz_counter_fn)(void *arg, const char *name, uint64_t value, int gauge);
/* A room's source of figures (its *_counters function) calls fn once per
 * figure, in a fixed order, allocating nothing. */

/* ---- counters.c ---- */
/* The counters: calls and bytes per operation and size class, counted by
 * each thread into its own block; and what the engine cleared, per kernel,
 * in process-wide atomics. */

/* ---- the counts, per thread ----
 * Each thread counts into a block of its own (no lock, no atomic, so no
 * count waits for the stores of the clear before it to drain), found
 * through a pointer in initial-exec TLS: the blocks, 5.5 KiB each, are
 * mapped ahead (a count makes no system call) and not in every thread's
 * static TLS, which ld.so clears at each thread's
 * start (the pages it spans below the thread's descriptor fault in for
 * every new stack). A thread takes its block at its first count: one an
 * exited thread left, or a new one; every block ever made stays in one
 * list and is summed on report, so a block passed on keeps its counts.
 * A forked child starts from zero. Calls and bytes per operation and
 * size class: class k (1..64) holds sizes in [2^(k-1), 2^k), class 1
 * also the size 0 (free counts there: the size of a block being freed is
 * not looked up). memset counts sizes above HZ_FRONT_MAX only: the small
 * path stays as it is. Then what the engine cleared, per kernel (fills
 * of at least HZ_COUNT_MIN bytes). A count made by a signal handler that
 * interrupts a count of the same thread may be lost, and so may counts
 * that threads without a block of their own make at once in the shared
 * one (where the lock was busy at their first count, or more than the
 * blocks mapped ahead are alive). */
enum hz_op { HZ_OP_MALLOC, HZ_OP_CALLOC, HZ_OP_REALLOC, HZ_OP_FREE, HZ_OP_MEMSET, HZ_OPS };
#define HZ_CLASSES 65
struct hz_tstats {
	uint64_t calls[HZ_OPS][HZ_CLASSES];
	uint64_t bytes[HZ_OPS][HZ_CLASSES];
	uint64_t kcalls[HZ_MAX_KERNELS], kbytes[HZ_MAX_KERNELS]; /* fills per kernel */
	uint64_t memset_chk_calls; /* __memset_chk of at least HZ_COUNT_MIN */
	uint64_t hinted_calls;     /* hinted clears that had a hint */
	struct hz_tstats *next;      /* every block made, for the sums */
	struct hz_tstats *next_free; /* blocks of exited threads, to take again */
};
extern HZ_TLS struct hz_tstats *hz_tstats_self;
HZ_NOINLINE struct hz_tstats *hz_tstats_take(void);
/* Set when the blocks mapped for threads to take run low: the caller of
 * a call that may make system calls (a large block's malloc) then maps
 * more with hz_counters_reserve. */
extern int hz_tstats_low;
void hz_counters_reserve(void);
extern const char *const hz_op_names[HZ_OPS];

/* This thread's block (the first count of a thread takes it). */
static inline struct hz_tstats *hz_tstats_mine(void)
{
	struct hz_tstats *t = hz_tstats_self;
	if (hz_unlikely(!t))
		t = hz_tstats_take();
	return t;
}

static inline unsigned hz_class(size_t n)
{
	return 64u - (unsigned)__builtin_clzll((unsigned long long)n | 1);
}

/* The smallest size in class k. */
static inline uint64_t hz_class_min(int k)
{
	return k <= 1 ? 0 : (uint64_t)1 << (k - 1);
}

static inline void hz_count(enum hz_op op, size_t n)
{
	struct hz_tstats *t = hz_tstats_mine();
	unsigned k = hz_class(n);
	t->calls[op][k]++;
	t->bytes[op][k] += n;
}

/* free: calls only, in class 1 (the block's size is not looked up). */
static inline void hz_count_free(void)
{
	struct hz_tstats *t = hz_tstats_mine();
	t->calls[HZ_OP_FREE][1]++;
}

/* The sums over all threads, past and present, into out. */
void hz_tstats_sum(struct hz_tstats *out);

/* Fills of at least HZ_COUNT_MIN bytes are counted per kernel. */
#define HZ_COUNT_MIN ((size_t)64 << 10)

static inline void hz_count_kernel(unsigned k, size_t n)
{
	if (n >= HZ_COUNT_MIN) {
		struct hz_tstats *t = hz_tstats_mine();
		t->kcalls[k]++;
		t->kbytes[k] += n;
	}
}

/* The engine's fill and hinted clear, counted: every clear the library
 * runs for the program goes through these, so the kernel figures cover
 * memset, calloc and the public clears alike. */
static inline void *hz_fill_counted(void *p, int c, size_t n)
{
	if (hz_learns(n)) {
		hz_count_kernel(hz_learn_fill(p, c, n), n);
		return p;
	}
	unsigned k = hz_policy_pick(&hz_policy, c, n);
	hz_count_kernel(k, n);
	hz_fill(k, p, c, n);
	return p;
}

static inline void *hz_zero_hinted_counted(void *p, size_t n, const void *hint)
{
	struct hz_section s[3];
	unsigned k = hz_zero_hinted(p, n, hint, s);
	if (k > 1 && n >= HZ_COUNT_MIN)
		hz_tstats_mine()->hinted_calls++;
	for (unsigned i = 0; i < k; i++)
		hz_count_kernel(s[i].kernel, s[i].len);
	return p;
}

/* Starts the per-thread blocks' exit handling (the library's
 * initialisation, before threads are made). The first blocks are mapped
 * by hz_counters_reserve, at the allocator's start. */
void hz_counters_setup(void);
/* fork (hz_obs_fork_*): the blocks' lock around it; the child counts
 * from zero, with only its own thread's block. */
void hz_counters_fork_prepare(void);
void hz_counters_fork_parent(void);
void hz_counters_fork_child(void);

/* ---- ab.c ---- */
/* Per-call A/B arms: each eligible call (memset, and every zeroed arena
 * block: calloc, mallocx with MALLOCX_ZERO, from a minimum size) goes at
 * random to arm A, the baseline (glibc's memset; for a zeroed block, the
 * block cleared whole by glibc's memset, as glibc's allocator clears
 * memory it recycles), or to arm B, hugezero's own path. Both give the same bytes. Each arm records per size class
 * calls, bytes, time and a latency histogram; the report gives their
 * means, percentiles, throughput and the B/A ratio of mean times with a
 * 95% confidence interval and a verdict. Recording never waits for its
 * lock (it drops the call's figures instead); a forked child starts with
 * empty arms. */

enum hz_ab_op { HZ_AB_MEMSET, HZ_AB_CALLOC, HZ_AB_OPS };
extern const char *const hz_ab_op_names[HZ_AB_OPS];

/* Set once by hz_ab_setup: 1 when the arms run. */
extern int hz_ab_on;
extern size_t hz_ab_min;

/* Starts the arms: share_a (0 to 1) of eligible calls from min bytes go
 * to arm A; seed makes the assignment repeatable. At initialisation,
 * before threads are made. 0, or -1 when their records (270 KiB) cannot
 * be mapped: the arms stay off. */
int hz_ab_setup(double share_a, uint64_t seed, size_t min);

/* The arms decide nothing and call nothing: the caller asks which arm a
 * call takes, makes the call that arm stands for (A: the baseline, glibc's
 * way; B: hugezero's), and records how long it took. */
enum hz_ab_arm { HZ_AB_NONE, HZ_AB_A, HZ_AB_B };
HZ_NOINLINE int hz_ab_pick(void);
/* The arm of an op call of size bytes: HZ_AB_NONE when the arms are off
 * or the call is below their minimum (one load and a branch). */
static inline int hz_ab_arm(int op, size_t size)
{
	(void)op;
	if (hz_likely(!__atomic_load_n(&hz_ab_on, __ATOMIC_RELAXED)) || size < hz_ab_min)
		return HZ_AB_NONE;
	return hz_ab_pick();
}
/* The process's arm (HUGEZERO_PROCESS_AB), drawn once at start: 1 (the
 * off mode, glibc's way for everything) with probability share_off (0 to
 * 1: 0 never, 1 always), a pure function of seed, so a given seed always
 * draws the same mode. */
int hz_ab_process_off(double share_off, uint64_t seed);
/* Records a call of arm (HZ_AB_A or HZ_AB_B) for op: n bytes in ns
 * nanoseconds. Never waits (see hz_ab_dropped). */
void hz_ab_record(int op, int arm, size_t n, uint64_t ns);

/* Latency histogram: log-linear buckets over nanoseconds, HZ_AB_H_SUB a
 * power of two, from 2^HZ_AB_H_LO ns. */
#define HZ_AB_H_LO 6
#define HZ_AB_H_MAJ 32
#define HZ_AB_H_SUB 4
#define HZ_AB_BUCKETS (HZ_AB_H_MAJ * HZ_AB_H_SUB)

/* One arm's figures for one operation and size class. */
struct hz_ab_cell {
	uint64_t calls, bytes;
	double ns, ns2; /* sum of times and of their squares */
};
/* The arms' cells in use, one at a time, each a consistent copy of its
 * figures and histograms: start from hz_ab_begin; hz_ab_next returns 0
 * past the last. */
struct hz_ab_cursor {
	int op, cls;
	struct hz_ab_cell a, b;
	uint64_t hist_a[HZ_AB_BUCKETS], hist_b[HZ_AB_BUCKETS];
};
/* The cursor before the first cell (only its place is set: a zeroed
 * 2 KiB cursor would be a memset call, which obs/ never makes). */
static inline void hz_ab_begin(struct hz_ab_cursor *c)
{
	c->op = 0;
	c->cls = -1;
}
int hz_ab_next(struct hz_ab_cursor *c);
/* Calls whose figures were dropped: the arms' lock was busy (a signal
 * handler interrupting a record on its own thread). */
uint64_t hz_ab_dropped(void);

/* ---- the statistics ---- */

/* The lower bound, in ns, of bucket b. */
double hz_ab_bucket_ns(int b);
/* The bucket a time of ns nanoseconds falls in (the first below its
 * range, the last above it). */
int hz_ab_bucket(double ns);

/* Means, and the B/A ratio of mean times with its 95% interval by the
 * delta method; verdict "B faster" (the interval below 1), "B slower"
 * (above), "no difference", or "not enough calls" (fewer than 2 an arm:
 * then every figure is 0). */
struct hz_ab_result {
	double mean_a, mean_b, ratio, lo, hi;
	const char *verdict;
};
void hz_ab_compare(const struct hz_ab_cell *a, const struct hz_ab_cell *b,
			     struct hz_ab_result *r);
/* The q-quantile (0..1) of a histogram, in ns: the midpoint of the bucket
 * it falls in; 0 for an empty histogram. */
double hz_ab_quantile(const uint64_t *hist, double q);

/* fork (hz_obs_fork_child): the child's arms start empty, with a seed
 * of their own. */
void hz_ab_fork_child(void);

/* ---- callsites.c ---- */
/* Call sites of large blocks and large memsets: one in N, per thread, has its stack taken (a backtrace function handed to setup:
 * libunwind's, which the library opens privately in libhugezero.so) and
 * counted in a fixed-size table keyed by the stack; the report lists the
 * top sites by bytes, symbolised. A sample is dropped, never waited for,
 * when the table is busy or the thread is already sampling, so sampling
 * cannot deadlock, and anything the backtrace function allocates
 * meanwhile is not sampled again. */

/* 1 once hz_callsites_setup took effect. */
extern int hz_callsites_on;

typedef int (*hz_backtrace_fn)(void **ips, int max);
/* Samples 1 in period calls (period >= 1) with backtrace. At
 * initialisation, before threads are made. 0, or -1 when its table
 * (320 KiB) cannot be mapped: sampling stays off. */
int hz_callsites_setup(unsigned period, hz_backtrace_fn backtrace);
/* fork (hz_obs_fork_child): the child's table starts empty. */
void hz_callsites_fork_child(void);
/* Counts down this thread's calls; takes a sample every period-th. */
HZ_NOINLINE void hz_callsite(size_t bytes);

#define HZ_SITE_FRAMES 16
/* One site as the report sees it: frames already symbolised. */
struct hz_site_frame {
	const char *function;  /* NULL when the module has no symbol there */
	uintptr_t offset;      /* from the function, or from the module */
	const char *module;
	uintptr_t module_offset; /* for addr2line */
	char build_id[41];
};
/* The top sites by bytes, one at a time, the library's own frames left
 * out: hz_callsites_begin copies the table (max sites at most), then each
 * hz_callsites_next gives the next one (0 after the last). The totals are
 * estimates: the sampled ones times the period. One walk at a time (the
 * report's lock). */
struct hz_site_cursor {
	unsigned rank, max, period;
	uint64_t calls, bytes;
	int nframes;
	struct hz_site_frame frames[HZ_SITE_FRAMES];
};
void hz_callsites_begin(struct hz_site_cursor *c, unsigned max);
int hz_callsites_next(struct hz_site_cursor *c);

/* ---- emit.c ---- */
/* The report's formats: one emitter each (text, JSON, Prometheus text
 * exposition) behind one interface, writing through a stack buffer that
 * report.c flushes with write(2). Nothing here allocates. */

struct hz_emitter;

/* The process's mode, which every report states (text: a "mode" line,
 * JSON: "mode", Prometheus: a mode label on every sample): 1 off, 0 on.
 * Set once at start (hz_report_process). */
extern int hz_report_off;
static inline const char *hz_report_mode(void)
{
	return hz_report_off ? "off" : "on";
}

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
 * (pid, mode, op, class, arm, le, bound, rank, site, job, instance), a value is
 * not UTF-8, or the whole is over 500 bytes. At setup. */
int hz_prom_labels(const char *spec);

/* ---- report.c ---- */
/* The report: every figure (obs.h), the size classes, the arms and the
 * call sites, in one format (emit.c), to stderr or to a private file per
 * process. */

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
/* The interval's thread could not start: the report is written at exit
 * (and on demand) only, as with no interval. */
void hz_report_no_interval(void);

/* obs/ calls no room above it: a walk over every figure is its caller's,
 * who calls the head, then each room's own source with the same fn (the
 * allocator's hz_large_counters, ...), then the tail. */
/* The engine's counters, first. */
void hz_obs_head(hz_counter_fn fn, void *arg);
/* The report's own figure (report.swept_files), the arms' drops, then
 * the process's own figures, last: its mode (process.off, 1 in the off
 * mode), minor faults and CPU time (user and system) so far, the wall
 * time since hz_report_process (so a window's faults and CPU time per
 * second of the process's life are ratios of two increases), resident
 * and peak resident bytes, transparent huge pages mapped. A figure the
 * system does not give (no /proc, a seccomp filter) is left out, never
 * written as 0. */
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

/* The process as its reports describe it, once its mode is decided
 * (off: 1 for the off mode), at start: its wall time counts from here. */
void hz_report_process(int off);
/* fork (hz_obs_fork_child): the child's report lock, unlocked; its wall
 * time counts from the fork, as its getrusage figures do. */
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

/* ---- fork_reset.c ---- fork, for the whole room, at its top. Called by the
 * library's one set of fork handlers (preload/fork_handlers.c), never registered
 * here: the counters' lock is held across the fork; the child starts its
 * counters, arms, call sites and report from zero, its figures being its
 * own. */

void hz_obs_fork_prepare(void);
void hz_obs_fork_parent(void);
void hz_obs_fork_child(void);
/* Last in the child, once the whole library is consistent again: what
 * the child may start (the report's interval thread). */
void hz_obs_fork_child_ready(void);

#pragma GCC visibility pop

#endif
