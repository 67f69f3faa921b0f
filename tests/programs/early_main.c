/* memset before the library's constructor (early.c) and inside a signal
 * handler that interrupts memset in the main loop. Prints one line per
 * check and "N passed, N failed". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

extern const char *early_kernel;
extern int early_ok;

static unsigned char hbuf[3 << 20];
static volatile sig_atomic_t handled, handler_bad;

static void on_alarm(int sig)
{
	(void)sig;
	int c = (int)(handled & 0x7f) + 1;
	memset(hbuf, c, sizeof hbuf);
	memset(hbuf + 5, 0, 200);
	if (hbuf[0] != c || hbuf[sizeof hbuf - 1] != c || hbuf[5] || hbuf[204] || hbuf[205] != c)
		handler_bad = 1;
	handled++;
}

int main(void)
{
	unsigned pass = 0, fail = 0;
	const char *(*kernel_for)(int, size_t) =
		(const char *(*)(int, size_t))dlsym(RTLD_DEFAULT, "hz_kernel_for");
	const char *now = kernel_for ? kernel_for(0xAB, 1 << 20) : "no library";

	printf("constructor before the library's: memset %s, kernel then %s, now %s\n",
	       early_ok ? "correct" : "WRONG", early_kernel, now);
	early_ok ? pass++ : fail++;

	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 500}, {0, 500}};
	setitimer(ITIMER_REAL, &it, NULL);
	static unsigned char mbuf[5 << 20];
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long loops = 0, bad = 0;
	do {
		size_t n = (loops * 7919) % sizeof mbuf;
		memset(mbuf, (int)(loops & 0xff), n);
		if (n && (mbuf[0] != (loops & 0xff) || mbuf[n - 1] != (loops & 0xff)))
			bad++;
		loops++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 300000000L);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	int ok = handled > 10 && !handler_bad && !bad;
	printf("signal handlers: %d memsets in handlers, %lu in the main loop, %s\n", (int)handled,
	       loops, ok ? "all correct" : "WRONG");
	ok ? pass++ : fail++;
	printf("%u passed, %u failed\n", pass, fail);
	return fail != 0;
}
