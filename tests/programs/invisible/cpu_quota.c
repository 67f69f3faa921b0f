/* invisible-env: HUGEZERO_THREADS=2 */
/* invisible-needs: root idle */
/* A container's CPU limit: a process in a cgroup whose quota is one CPU
 * (cpu.cfs_quota_us = cpu.cfs_period_us, or cpu.max "100000 100000")
 * gets no helper thread from the library: a helper's time would count
 * against the program's quota (/proc/loadavg, which counts the whole
 * host, says nothing of it). The program makes the group, runs itself
 * again inside it (the library reads the quota at its start), and
 * removes the group after. Inside, in the library's run: the helpers the
 * library would offer work to number 0, and memsets of a new 256 MiB
 * block are never split (under glibc the same memsets just run). */
#include "invisible.h"

#include <fcntl.h>
#include <sys/stat.h>

/* Writes s into the file path: 0, or -1. */
static int put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Inside the group: the library's answer. */
static int inside(void)
{
	const size_t n = 256 * MIB;
	uint64_t f0 = under_hz() ? counter("helpers.fills") : 0;
	for (int r = 0; r < 5; r++) {
		unsigned char *p = malloc(n);
		if (!p)
			fail("malloc(256 MiB)");
		memset(p, 0x5A + r, n);
		if (first_not(p, 0x5A + r, n) != n)
			fail("memset left bytes unwritten");
		free(p);
	}
	if (under_hz()) {
		uint64_t helpers = counter("helpers.helpers"), fills = counter("helpers.fills") - f0;
		if (helpers || fills)
			fail("a quota of one CPU: %llu helper(s) offered work, %llu memset(s) split",
			     (unsigned long long)helpers, (unsigned long long)fills);
		note("a quota of one CPU: no helper, no memset split");
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "inside"))
		return inside();
	/* cgroup v1's cpu controller, else v2's root hierarchy. */
	char dir[128], file[192];
	const char *v1 = "/sys/fs/cgroup/cpu";
	int v2 = access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", F_OK) != 0;
	snprintf(dir, sizeof dir, "%s/invisible-quota-%d", v2 ? "/sys/fs/cgroup" : v1, (int)getpid());
	if (v2 && access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		skip("no cgroup cpu controller");
	if (mkdir(dir, 0755))
		skip("cannot make a cgroup: %s", strerror(errno));
	int bad = 0;
	if (v2) {
		snprintf(file, sizeof file, "%s/cpu.max", dir);
		bad = put(file, "100000 100000");
	} else {
		snprintf(file, sizeof file, "%s/cpu.cfs_period_us", dir);
		bad = put(file, "100000");
		snprintf(file, sizeof file, "%s/cpu.cfs_quota_us", dir);
		bad = bad || put(file, "100000");
	}
	if (bad) {
		rmdir(dir);
		skip("cannot set the group's CPU quota: %s", strerror(errno));
	}
	pid_t pid = fork();
	if (pid == 0) {
		char me[16];
		snprintf(file, sizeof file, "%s/cgroup.procs", dir);
		snprintf(me, sizeof me, "%d", (int)getpid());
		if (put(file, me))
			_exit(77);
		execl("/proc/self/exe", argv[0], "inside", (char *)NULL);
		_exit(1);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = 1 << 8;
	rmdir(dir);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		skip("cannot move a process into the group");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
