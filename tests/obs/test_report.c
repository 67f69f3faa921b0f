/* The report: a room's figures and the size classes in each
 * of the three formats, written to a file on demand; the process's mode
 * and own figures; figures by name; Prometheus names; bad formats, paths
 * and labels refused; the per-thread counts across threads' exits and a
 * fork. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../os/os.h"
#include "../../obs/obs.h"

static void source(hz_counter_fn fn, void *arg)
{
	fn(arg, "test.things", 5, 0);
	fn(arg, "test.level_bytes", 7, 1);
}

/* A report as its caller writes it: the head, a room's figures, the end. */
static int dump(const char *path, const char *format)
{
	struct hz_report r;
	if (hz_report_begin(&r, path, format))
		return -1;
	source(hz_report_figure, &r);
	return hz_report_end(&r);
}

static int find(const char *name, uint64_t *value)
{
	struct hz_obs_find f = {name, 0, 0};
	hz_obs_head(hz_obs_find_figure, &f);
	source(hz_obs_find_figure, &f);
	hz_obs_tail(hz_obs_find_figure, &f);
	*value = f.value;
	return f.found ? 0 : ENOENT;
}

static char dir[] = "/tmp/hz-report-XXXXXX";

/* The report in format, read back. */
static char *report(const char *format)
{
	static char buf[1 << 16];
	char path[128], file[160];
	snprintf(path, sizeof path, "%s/r-%s", dir, format);
	cr_assert_eq(dump(path, format), 0, "%s: %s", format, strerror(errno));
	snprintf(file, sizeof file, "%s.%d", path, getpid());
	size_t len;
	cr_assert_eq(hz_os_read_file(file, buf, sizeof buf, &len), 0, "%s", file);
	cr_assert_lt(len, sizeof buf - 1, "report cut");
	unlink(file);
	return buf;
}

Test(report, formats)
{
	cr_assert_not_null(mkdtemp(dir));
	for (int i = 0; i < 4; i++)
		hz_count(HZ_OP_MALLOC, 3000);
	uint64_t v;
	cr_assert_eq(find("test.things", &v), 0);
	cr_assert_eq(v, 5);
	cr_assert_eq(find("no.such.figure", &v), ENOENT);

	const char *t = report("text");
	cr_assert_not_null(strstr(t, "\ntest.things 5\n"), "%s", t);
	cr_assert_not_null(strstr(t, "\ntest.level_bytes 7\n"));
	cr_assert_not_null(strstr(t, "\nmalloc.class.2048.calls 4\nmalloc.class.2048.bytes 12000\n"));
	cr_assert_not_null(strstr(t, "\nprocess.rss_bytes "));
	cr_assert_eq(strncmp(t, "mode on\n", 8), 0, "%s", t);

	const char *j = report("json");
	cr_assert_not_null(strstr(j, "\n    \"test.things\": 5"), "%s", j);
	cr_assert_not_null(strstr(j, "\"malloc\": [{\"min\": 2048, \"calls\": 4, \"bytes\": 12000}]"));
	cr_assert_eq(j[0], '{');
	cr_assert_not_null(strstr(j, "\n  \"mode\": \"on\",\n"), "%s", j);
	cr_assert_str_eq(j + strlen(j) - 3, "\n}\n");

	char want[160];
	const char *p = report("prometheus");
	snprintf(want, sizeof want, "# TYPE hugezero_test_things_total counter\nhugezero_test_things_total{pid=\"%d\",mode=\"on\"} 5\n",
		 getpid());
	cr_assert_not_null(strstr(p, want), "%s", p);
	snprintf(want, sizeof want, "# TYPE hugezero_test_level_bytes gauge\nhugezero_test_level_bytes{pid=\"%d\",mode=\"on\"} 7\n",
		 getpid());
	cr_assert_not_null(strstr(p, want));
	snprintf(want, sizeof want, "hugezero_bytes_total{pid=\"%d\",mode=\"on\",op=\"malloc\",class=\"2048\"} 12000\n", getpid());
	cr_assert_not_null(strstr(p, want));
	rmdir(dir);
}

/* The process's own figures, as getrusage and /proc give them, and its
 * mode in each format; the mode label is the report's own. */
Test(report, process_figures_and_mode)
{
	cr_assert_not_null(mkdtemp(dir));
	uint64_t faults, cpu, rss, peak, off, wall, wall_later;
	hz_report_process(0);
	cr_assert_eq(find("process.minor_faults", &faults), 0);
	cr_assert_eq(find("process.wall_time_ns", &wall), 0);
	cr_assert_eq(find("process.cpu_time_ns", &cpu), 0);
	cr_assert_eq(find("process.rss_bytes", &rss), 0);
	cr_assert_eq(find("process.peak_rss_bytes", &peak), 0);
	cr_assert_eq(find("process.off", &off), 0);
	cr_assert_gt(faults, 0);
	cr_assert_gt(rss, 0);
	cr_assert_geq(peak, rss);
	cr_assert_eq(off, 0);
	/* CPU time grows as the process computes (10 ms of it, at most ~1 ms
	 * of rusage's granularity off). */
	volatile uint64_t x = 1;
	for (uint64_t t0 = hz_os_thread_cpu_ns(); hz_os_thread_cpu_ns() - t0 < 10000000u;)
		x = x * 6364136223846793005ull + 1;
	uint64_t later;
	cr_assert_eq(find("process.cpu_time_ns", &later), 0);
	cr_assert_geq(later - cpu, 9000000u, "%llu ns more", (unsigned long long)(later - cpu));
	/* The wall time counts from hz_report_process, and with the CPU time. */
	cr_assert_eq(find("process.wall_time_ns", &wall_later), 0);
	cr_assert_geq(wall_later - wall, 10000000u);
	cr_assert_lt(wall, 1000000000u, "%llu ns since hz_report_process", (unsigned long long)wall);

	hz_report_process(1);
	cr_assert_eq(find("process.off", &off), 0);
	cr_assert_eq(off, 1);
	cr_assert_eq(strncmp(report("text"), "mode off\n", 9), 0);
	cr_assert_not_null(strstr(report("json"), "\n  \"mode\": \"off\",\n"));
	char want[160];
	const char *p = report("prometheus");
	snprintf(want, sizeof want, "\nhugezero_process_minor_faults_total{pid=\"%d\",mode=\"off\"} ", getpid());
	cr_assert_not_null(strstr(p, want), "%s", p);
	snprintf(want, sizeof want, "\nhugezero_process_cpu_time_seconds_total{pid=\"%d\",mode=\"off\"} ", getpid());
	cr_assert_not_null(strstr(p, want));
	snprintf(want, sizeof want, "\nhugezero_process_wall_time_seconds_total{pid=\"%d\",mode=\"off\"} 0.", getpid());
	cr_assert_not_null(strstr(p, want));
	snprintf(want, sizeof want, "\nhugezero_process_off{pid=\"%d\",mode=\"off\"} 1\n", getpid());
	cr_assert_not_null(strstr(p, want));
	cr_assert_eq(hz_prom_labels("mode=on"), -1, "the mode label is the report's");
	cr_assert_eq(hz_prom_labels("service=a,mode=on"), -1);
	rmdir(dir);
}

Test(report, refusals)
{
	errno = 0;
	cr_assert_eq(dump("/tmp/hz-report-unused", "xml"), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(access("/tmp/hz-report-unused", F_OK), -1, "a refused format wrote");
	errno = 0;
	cr_assert_eq(dump("/nonexistent-hugezero/r", "text"), -1);
	cr_assert_eq(errno, ENOENT);
}

Test(report, prometheus_names)
{
	regex_t re;
	cr_assert_eq(regcomp(&re, "^[a-zA-Z_:][a-zA-Z0-9_:]*$", REG_EXTENDED | REG_NOSUB), 0);
	static const char *const names[] = {"memset.large.calls", "kernel.avx512_nt.bytes",
					    "process.rss_bytes", "x"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		for (int gauge = 0; gauge < 2; gauge++) {
			char pn[128], want[128];
			hz_prom_name(pn, sizeof pn, names[i], gauge);
			cr_assert_eq(regexec(&re, pn, 0, NULL, 0), 0, "%s is no metric name", pn);
			snprintf(want, sizeof want, "hugezero_%s%s", names[i], gauge ? "" : "_total");
			for (char *c = want; *c; c++)
				*c = *c == '.' ? '_' : *c;
			cr_assert_str_eq(pn, want);
		}
	regfree(&re);
}

/* The counts of reallocs of 1 MiB (class 21), summed over every thread. */
static uint64_t counted(void)
{
	struct hz_tstats t;
	hz_tstats_sum(&t);
	return t.calls[HZ_OP_REALLOC][21];
}

static pthread_barrier_t *together; /* where set, threads exit only once all have counted */

static void *count_three(void *arg)
{
	for (int i = 0; i < 3; i++)
		hz_count(HZ_OP_REALLOC, 1 << 20);
	*(struct hz_tstats **)arg = hz_tstats_self;
	if (together)
		pthread_barrier_wait(together);
	return NULL;
}

/* Threads that count and exit: nothing lost, each exited thread's block
 * taken by the next thread (one after the other: one block for them all),
 * and at most one block each for threads that run at once. */
Test(counters, threads_pass_blocks_on)
{
	hz_counters_setup();
	hz_counters_reserve(); /* as the allocator's start does */
	struct hz_tstats *seen[200];
	for (int i = 0; i < 200; i++) {
		pthread_t th;
		cr_assert_eq(pthread_create(&th, NULL, count_three, &seen[i]), 0);
		cr_assert_eq(pthread_join(th, NULL), 0);
		cr_assert_not_null(seen[i]);
		cr_assert_eq(seen[i], seen[0], "thread %d took a new block", i);
	}
	cr_assert_eq(counted(), 600);
	pthread_barrier_t b4;
	cr_assert_eq(pthread_barrier_init(&b4, NULL, 4), 0);
	together = &b4;
	struct hz_tstats *all[20 * 4];
	for (int round = 0; round < 20; round++) {
		pthread_t th[4];
		struct hz_tstats **b = &all[round * 4];
		for (int i = 0; i < 4; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, count_three, &b[i]), 0);
		for (int i = 0; i < 4; i++)
			cr_assert_eq(pthread_join(th[i], NULL), 0);
		/* Only the shared block (a thread that found the lock busy) may
		 * be seen twice. */
		struct hz_tstats *twice = NULL;
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < i; j++)
				if (b[i] == b[j]) {
					cr_assert(!twice || twice == b[i], "two live threads shared a block");
					twice = b[i];
				}
	}
	together = NULL;
	cr_assert_eq(counted(), 600 + 20 * 4 * 3);
	/* Blocks are passed on: 4 at a time took at most 4 in all. */
	int blocks = 0;
	for (int i = 0; i < 20 * 4; i++) {
		int again = 0;
		for (int j = 0; j < i; j++)
			again |= all[j] == all[i];
		blocks += !again;
	}
	cr_assert_leq(blocks, 5, "%d blocks for 4 threads at a time (and the shared one)", blocks);
}

static void *count_and_wait(void *arg)
{
	hz_count(HZ_OP_REALLOC, 1 << 20);
	*(struct hz_tstats **)arg = hz_tstats_self;
	pthread_barrier_wait(together);
	return NULL;
}

/* n threads live at once, each counting once: how many distinct blocks. */
static int live_at_once(int n)
{
	static pthread_t th[1200];
	static struct hz_tstats *b[1200];
	cr_assert_leq(n, 1200);
	pthread_attr_t small;
	pthread_attr_init(&small);
	pthread_attr_setstacksize(&small, 256 << 10);
	pthread_barrier_t bar;
	cr_assert_eq(pthread_barrier_init(&bar, NULL, (unsigned)n), 0);
	together = &bar;
	for (int i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&th[i], &small, count_and_wait, &b[i]), 0);
	for (int i = 0; i < n; i++)
		cr_assert_eq(pthread_join(th[i], NULL), 0);
	together = NULL;
	pthread_barrier_destroy(&bar);
	pthread_attr_destroy(&small);
	int own = 0;
	for (int i = 0; i < n; i++) {
		int again = 0;
		for (int j = 0; j < i && !again; j++)
			again = b[j] == b[i];
		own += !again && b[i];
	}
	return own;
}

/* More threads at once than the blocks mapped ahead (64): the flag asks
 * for more, and once they are mapped nearly every thread has a block of
 * its own again (a thread that finds the lock busy counts into the
 * shared block, where counts made at once may be lost). */
Test(counters, blocks_mapped_again_when_low)
{
	hz_counters_setup();
	hz_counters_reserve(); /* as the allocator's start does */
	cr_assert_eq(hz_tstats_low, 0);
	live_at_once(100);
	cr_assert_eq(hz_tstats_low, 1, "100 threads at once, and no call for more blocks");
	hz_counters_reserve();
	cr_assert_eq(hz_tstats_low, 0);
	uint64_t first = counted();
	cr_assert(first >= 50 && first <= 100, "%llu of 100 counted", (unsigned long long)first);
	/* The first 100 left their blocks for these, and more were mapped. */
	int own = live_at_once(100);
	cr_assert_geq(own, 90, "%d of 100 threads had a block of their own", own);
	uint64_t second = counted() - first;
	cr_assert(second >= 90 && second <= 100, "%llu of 100 counted", (unsigned long long)second);
}

/* A mapping for more blocks refused (the address-space limit reached):
 * the flag is cleared, so that large mallocs do not each try again, and
 * set again once a thread finds the blocks spent; then mapped. */
Test(counters, refused_mapping_tried_again_later)
{
	hz_counters_setup();
	hz_counters_reserve(); /* as the allocator's start does */
	live_at_once(100);
	cr_assert_eq(hz_tstats_low, 1);
	struct rlimit old, tight;
	cr_assert_eq(getrlimit(RLIMIT_AS, &old), 0);
	size_t vsz = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%zu", &vsz), 1);
	fclose(f);
	tight = old;
	tight.rlim_cur = vsz * (size_t)sysconf(_SC_PAGESIZE) + (64 << 10);
	cr_assert_eq(setrlimit(RLIMIT_AS, &tight), 0);
	hz_counters_reserve();
	int low = hz_tstats_low;
	cr_assert_eq(setrlimit(RLIMIT_AS, &old), 0);
	cr_assert_eq(low, 0, "a refused mapping left the flag set");
	/* Threads that find the blocks spent count into the shared block,
	 * and ask again. */
	uint64_t before = counted();
	live_at_once(100);
	uint64_t now = counted() - before;
	cr_assert(now >= 50 && now <= 100, "%llu of 100 counted", (unsigned long long)now);
	cr_assert_eq(hz_tstats_low, 1);
	hz_counters_reserve();
	cr_assert_eq(hz_tstats_low, 0);
}

/* A forked child counts from zero, and its parent as before. */
Test(counters, fork_child_from_zero)
{
	hz_counters_setup();
	hz_counters_reserve(); /* as the allocator's start does */
	pthread_t th;
	struct hz_tstats *b;
	cr_assert_eq(pthread_create(&th, NULL, count_three, &b), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	hz_count(HZ_OP_REALLOC, 1 << 20);
	cr_assert_eq(counted(), 4);
	pid_t pid = fork(); /* the rooms' fork handlers are registered (util/setup.c) */
	cr_assert_geq(pid, 0);
	if (!pid) {
		int bad = counted() != 0;
		hz_count(HZ_OP_REALLOC, 1 << 20);
		bad |= (counted() != 1) << 1;
		/* A thread of the child counts from zero too. */
		if (pthread_create(&th, NULL, count_three, &b) || pthread_join(th, NULL))
			bad |= 4;
		bad |= (counted() != 4) << 3;
		_exit(bad);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
	cr_assert_eq(counted(), 4);
}
