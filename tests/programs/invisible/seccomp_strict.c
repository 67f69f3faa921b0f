/* invisible-env: HUGEZERO_THREADS=2 */
/* invisible-needs: */
/* memset under strict seccomp: a process that allocated and cleared a
 * large block (the library's helpers started), then entered
 * SECCOMP_MODE_STRICT (read, write, _exit and sigreturn only), memsets
 * the block again, writes "ok" and leaves by the exit system call
 * (exit_group is not allowed). Under glibc memset makes no system call;
 * under the library it must make none either (and take no lock it could
 * wait on forever): a system call there kills the thread.
 *
 * The program runs itself again (a fresh process, not a forked child,
 * which the library treats as one) with its output on a pipe, and checks
 * that it printed ok and ended with status 0 within its bound. No idle
 * core is needed: the library asks for one (reads /proc/loadavg) as it
 * offers the memset to its helpers. HUGEZERO_THREADS=2 makes it offer on
 * a machine of one CPU too. */
#include "invisible.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define SIZE ((size_t)256 << 20)
#define BOUND_S 15 /* the library's threads may linger past the main thread's exit */

static int strict(void)
{
	unsigned char *p = malloc(SIZE);
	if (!p)
		fail("malloc(%zu MiB)", SIZE >> 20);
	memset(p, 1, SIZE);
	memset(p, 2, SIZE);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT))
		skip("prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT): %s", strerror(errno));
	memset(p, 3, SIZE);
	static const char ok[] = "ok\n", bad[] = "bytes\n";
	/* first_not makes no system call. */
	int right = first_not(p, 3, SIZE) == SIZE;
	if (write(1, right ? ok : bad, right ? sizeof ok - 1 : sizeof bad - 1) < 0)
		syscall(SYS_exit, 2);
	syscall(SYS_exit, 0);
	return 1;
}

/* Whether the process's main thread has ended while others live (its
 * task a zombie). */
static int main_gone(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t k = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[k] = 0;
	const char *e = strrchr(buf, ')'); /* "pid (comm) S ..." */
	return e && (e[2] == 'Z' || e[2] == 'X');
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "strict")) {
		alarm(BOUND_S + 5);
		return strict();
	}
	int fd[2];
	if (pipe2(fd, O_CLOEXEC))
		fail("pipe: %s", strerror(errno));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid) {
		dup2(fd[1], 1);
		execl("/proc/self/exe", argv[0], "strict", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	char out[64] = "";
	size_t len = 0;
	int st = 0, done = 0;
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)BOUND_S * 1000000000u;
	while (!done && now_ns() < end) {
		struct pollfd pf = {fd[0], POLLIN, 0};
		if (poll(&pf, 1, 50) > 0 && len < sizeof out - 1) {
			ssize_t k = read(fd[0], out + len, sizeof out - 1 - len);
			len += k > 0 ? (size_t)k : 0;
		}
		pid_t w = waitpid(pid, &st, WNOHANG);
		done = w == pid;
		if (!done && !memchr(out, '\n', len) && main_gone(pid)) {
			/* What it wrote before it ended is in the pipe by now. */
			struct pollfd pf2 = {fd[0], POLLIN, 0};
			if (poll(&pf2, 1, 200) > 0 && len < sizeof out - 1) {
				ssize_t k = read(fd[0], out + len, sizeof out - 1 - len);
				len += k > 0 ? (size_t)k : 0;
			}
			if (memchr(out, '\n', len))
				continue;
			if (waitpid(pid, &st, WNOHANG) == pid) {
				done = 1;
				continue;
			}
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail("the child's main thread ended without a word, and the process lives on (strict "
			     "seccomp kills a thread at a forbidden system call)");
		}
	}
	if (!done) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		fail("the child printed '%.*s' and did not end within %d s (a thread of the process waits forever)",
		     (int)strcspn(out, "\n"), out, BOUND_S);
	}
	ssize_t k;
	while (len < sizeof out - 1 && (k = read(fd[0], out + len, sizeof out - 1 - len)) > 0)
		len += (size_t)k;
	out[len] = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		skip("strict seccomp not available here");
	if (WIFSIGNALED(st))
		fail("the child was killed by %s (strict seccomp kills a thread at a forbidden system call), printed '%.*s'",
		     strsignal(WTERMSIG(st)), (int)strcspn(out, "\n"), out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("the child exited %d", WEXITSTATUS(st));
	if (strcmp(out, "ok\n"))
		fail("the child printed '%.*s', not ok", (int)strcspn(out, "\n"), out);
	note("a memset under strict seccomp: ok, the process ended in %.1f s", (now_ns() - t0) / 1e9);
	return 0;
}
