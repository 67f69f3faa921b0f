/* Shared by the invisible cases (tests/programs/invisible.sh): each case
 * is a program that must behave the same without the library (glibc) and
 * with it preloaded. The script sets INVISIBLE_HZ=1 in the library's run;
 * there, the library's counters are read by hz_stat (found with dlsym),
 * and a case that needs a helper to take part fails when none did.
 *
 * Exit status: 0 passed, 1 failed (a line on stderr says why), 77 the
 * environment does not allow the case (skipped, never a pass), 75 the
 * case judged nothing: no helper took part (a busy machine gives them no
 * idle core; the script runs it again, and fails it the third time).
 *
 * A case may run variants, each in a process of its own: the program
 * runs itself again (/proc/self/exe, so a fresh process under the same
 * preload and mount namespace, not a forked child, which the library
 * treats as a child) with the variant's name as its argument. */
#ifndef INVISIBLE_H
#define INVISIBLE_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* Each case uses some of these. */
#define INV static __attribute__((unused))

static const char *inv_variant = ""; /* the variant this process runs, for messages */

INV void inv_vmsg(const char *what, const char *fmt, va_list ap)
{
	char buf[1024];
	int k = snprintf(buf, sizeof buf, "%s%s%s: ", what, *inv_variant ? " " : "", inv_variant);
	vsnprintf(buf + k, sizeof buf - (size_t)k, fmt, ap);
	fprintf(stderr, "%s\n", buf);
}

/* A verdict: its message on stderr, then the exit status. */
#define INV_VERDICT(name, what, status)                                                    \
	__attribute__((noreturn, format(printf, 1, 2))) INV void name(const char *fmt, ...) \
	{                                                                                   \
		va_list ap;                                                                 \
		va_start(ap, fmt);                                                          \
		inv_vmsg(what, fmt, ap);                                                    \
		va_end(ap);                                                                 \
		exit(status);                                                               \
	}
/* The case failed: why; exit 1. */
INV_VERDICT(fail, "FAIL", 1)
/* No helper took part, so the case judged nothing: why; exit 75. */
INV_VERDICT(unjudged, "FAIL", 75)
/* The environment does not allow the case: why; exit 77. */
INV_VERDICT(skip, "skip", 77)

/* What the case saw, on stdout. */
__attribute__((format(printf, 1, 2))) INV void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

INV uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

INV void sleep_ns(uint64_t ns)
{
	struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* Whether this is the library's run (the script says so). */
INV int under_hz(void)
{
	const char *e = getenv("INVISIBLE_HZ");
	return e && *e == '1';
}

/* One of the library's counters (the names HUGEZERO_STATS writes); only
 * in the library's run, where a counter that cannot be read fails the
 * case: a check that cannot be made must not pass. */
INV uint64_t counter(const char *name)
{
	static int (*stat)(const char *, uint64_t *);
	uint64_t v = 0;
	if (!under_hz())
		fail("counter %s read outside the library's run", name);
	if (!stat)
		*(void **)&stat = dlsym(RTLD_DEFAULT, "hz_stat");
	if (!stat)
		fail("INVISIBLE_HZ is set but hz_stat is not found: the library is not loaded");
	int e = stat(name, &v);
	if (e)
		fail("hz_stat(\"%s\"): %s", name, strerror(e));
	return v;
}

/* Bytes the helpers wrote or populated so far (0 outside the library). */
INV uint64_t helpers_work(void)
{
	return under_hz() ? counter("helpers.filled_bytes") + counter("helpers.populated_bytes") : 0;
}

/* The first byte of [p, p + n) that is not c, or n. */
INV size_t first_not(const unsigned char *p, int c, size_t n)
{
	uint64_t w = 0x0101010101010101ull * (unsigned char)c;
	size_t i = 0;
	for (; i < n && ((uintptr_t)(p + i) & 7); i++)
		if (p[i] != (unsigned char)c)
			return i;
	for (; i + 8 <= n; i += 8)
		if (*(const uint64_t *)(const void *)(p + i) != w)
			break;
	for (; i < n; i++)
		if (p[i] != (unsigned char)c)
			return i;
	return n;
}

/* The 4 KiB pages of [p, p + n) holding a byte other than c. */
INV size_t pages_not(const unsigned char *p, int c, size_t n)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i += 4096) {
		size_t len = n - i < 4096 ? n - i : 4096;
		bad += first_not(p + i, c, len) != len;
	}
	return bad;
}

struct variant {
	const char *name;
	int (*run)(void); /* 0 passed; fail(), unjudged() and skip() exit */
	unsigned seconds; /* its bound: killed by SIGALRM past it */
};

/* With no argument: every variant, each run as a process of its own, its
 * verdict on stdout; 1 when any failed, else 75 when any judged
 * nothing, else 77 when any was skipped.
 * With a variant's name: that variant, in this process. */
INV int run_variants(int argc, char **argv, const struct variant *v, size_t nv)
{
	if (argc > 1) {
		for (size_t i = 0; i < nv; i++)
			if (!strcmp(argv[1], v[i].name)) {
				inv_variant = v[i].name;
				alarm(v[i].seconds);
				return v[i].run();
			}
		fprintf(stderr, "no variant %s\n", argv[1]);
		return 2;
	}
	int failed = 0, skipped = 0, unjudged_any = 0;
	for (size_t i = 0; i < nv; i++) {
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		if (pid < 0)
			fail("fork: %s", strerror(errno));
		if (!pid) {
			execl("/proc/self/exe", argv[0], v[i].name, (char *)NULL);
			_exit(127);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			note("variant %s: ok", v[i].name);
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			note("variant %s: skipped", v[i].name);
			skipped = 1;
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 75) {
			note("variant %s: judged nothing", v[i].name);
			unjudged_any = 1;
		} else {
			if (WIFSIGNALED(st))
				fprintf(stderr, "FAIL %s: killed by signal %d (%s)%s\n", v[i].name, WTERMSIG(st),
					strsignal(WTERMSIG(st)),
					WTERMSIG(st) == SIGALRM ? ": no end within its bound" : "");
			else
				fprintf(stderr, "FAIL %s: exit %d\n", v[i].name, WEXITSTATUS(st));
			failed = 1;
		}
	}
	return failed ? 1 : unjudged_any ? 75 : skipped ? 77 : 0;
}

#endif
