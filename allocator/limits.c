/* What the process may use (limits.c). */
#include <string.h>

#include "allocator.h"
#include "../os/os.h"

struct hz_limits hz_limits = {.overcommit = 0, .as = HZ_LIMIT_NONE, .data = HZ_LIMIT_NONE,
			      .cgroup = HZ_LIMIT_NONE};

#define V1_BASE "/sys/fs/cgroup/memory"
#define V2_BASE "/sys/fs/cgroup"
/* v1 writes "no limit" as the page counter's largest value. */
#define NO_LIMIT_ABOVE ((size_t)1 << 60)

/* A decimal number at the start of s into *v: 0, or -1 ("max" or junk). */
static int number(const char *s, size_t *v)
{
	size_t n = 0;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (n > (SIZE_MAX - 9) / 10)
			return -1;
		n = n * 10 + (size_t)(*s - '0');
	}
	*v = n;
	return 0;
}

/* The number in the file dir/name, or HZ_LIMIT_NONE. */
static size_t read_number(const char *dir, const char *name)
{
	char path[sizeof hz_limits.dir + 32], buf[64];
	size_t dl = strlen(dir), nl = strlen(name), len, v;
	if (dl + nl + 2 > sizeof path)
		return HZ_LIMIT_NONE;
	memcpy(path, dir, dl);
	path[dl] = '/';
	memcpy(path + dl + 1, name, nl + 1);
	if (hz_os_read_file(path, buf, sizeof buf, &len) || number(buf, &v) || v >= NO_LIMIT_ABOVE)
		return HZ_LIMIT_NONE;
	return v;
}

/* The group's limit: the least of v2's memory.max and memory.high, or
 * v1's memory.limit_in_bytes. */
static size_t limit_of(const char *dir, int version)
{
	if (version == 1)
		return read_number(dir, "memory.limit_in_bytes");
	size_t max = read_number(dir, "memory.max"), high = read_number(dir, "memory.high");
	return max < high ? max : high;
}

/* The controller ctl's path of this process from /proc/self/cgroup
 * into path (cap bytes), and its version: 1 ("N:...ctl...:/p"), 2
 * ("0::/p"), or 0 when the file cannot be read. */
static int own_group(const char *ctl_name, char *path, size_t cap)
{
	size_t cl = strlen(ctl_name);
	char buf[2048];
	size_t len;
	if (hz_os_read_file("/proc/self/cgroup", buf, sizeof buf, &len))
		return 0;
	int version = 0;
	for (char *line = buf; *line;) {
		char *end = strchr(line, '\n');
		if (end)
			*end = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2) {
			*c2 = 0;
			const char *ctl = c1 + 1, *p = c2 + 1;
			int v1 = 0;
			for (const char *w = ctl; (w = strstr(w, ctl_name)); w += cl)
				if ((w == ctl || w[-1] == ',') && (w[cl] == 0 || w[cl] == ','))
					v1 = 1;
			if ((v1 || (!*ctl && !version)) && strlen(p) < cap) {
				memcpy(path, p, strlen(p) + 1);
				version = v1 ? 1 : 2;
				if (v1)
					break;
			}
		}
		if (!end)
			break;
		line = end + 1;
	}
	return version;
}

/* A walk from a group's directory under base up to its hierarchy's root. */
struct walk {
	const char *base, *group;
	size_t gl;    /* the part of group left to walk */
	int done, bad; /* past the root; a directory too long for the caller's buffer */
};

/* The walk's next directory into dir (cap bytes): 1, or 0 once past the
 * root (or bad set, where it did not fit). */
static int walk_next(struct walk *w, char *dir, size_t cap)
{
	size_t bl = strlen(w->base), gl = w->gl;
	if (w->done)
		return 0;
	while (gl && w->group[gl - 1] == '/')
		gl--;
	if (bl + gl + 1 > cap) {
		w->bad = 1;
		return 0;
	}
	memcpy(dir, w->base, bl);
	memcpy(dir + bl, w->group, gl);
	dir[bl + gl] = 0;
	w->done = !gl;
	while (gl && w->group[gl - 1] != '/')
		gl--;
	w->gl = gl;
	return 1;
}

/* Walks from the process's group up to the hierarchy's root and keeps
 * the least limit and its directory. */
static void read_cgroup(void)
{
	char group[sizeof hz_limits.dir], dir[sizeof hz_limits.dir];
	int version = own_group("memory", group, sizeof group - sizeof V1_BASE);
	if (!version) { /* no /proc: the namespace's root group, as mounted */
		group[0] = 0;
		version = read_number(V1_BASE, "memory.limit_in_bytes") != HZ_LIMIT_NONE ? 1 : 2;
	}
	if (version == 2) {
		/* A hybrid system's v2 group has no memory controller: v1's may. */
		char buf[256];
		size_t len;
		if (hz_os_read_file(V2_BASE "/cgroup.controllers", buf, sizeof buf, &len) || !strstr(buf, "memory"))
			return;
	}
	struct walk w = {version == 1 ? V1_BASE : V2_BASE, group, strlen(group), 0, 0};
	size_t best = HZ_LIMIT_NONE;
	while (walk_next(&w, dir, sizeof dir)) {
		size_t l = limit_of(dir, version);
		if (l < best) {
			best = l;
			memcpy(hz_limits.dir, dir, strlen(dir) + 1);
		}
	}
	if (w.bad)
		return;
	hz_limits.cgroup_version = version;
	hz_limits.cgroup = best;
}

/* The CPUs a quota of quota us every period us allows, rounded down, at
 * least 1; 0 for none. */
static unsigned quota_cpus(size_t quota, size_t period)
{
	if (quota == HZ_LIMIT_NONE || period == HZ_LIMIT_NONE || !period)
		return 0;
	size_t c = quota / period;
	return c < 1 ? 1 : c > 4096 ? 4096 : (unsigned)c;
}

/* The CPUs group directory dir's quota allows (cgroup version), or 0:
 * v2's cpu.max ("max 100000" or "200000 100000"), v1's cpu.cfs_quota_us
 * over cpu.cfs_period_us (-1: none). */
static unsigned quota_of(const char *dir, int version)
{
	if (version == 1)
		return quota_cpus(read_number(dir, "cpu.cfs_quota_us"), read_number(dir, "cpu.cfs_period_us"));
	char path[sizeof hz_limits.dir + 16], buf[64];
	size_t dl = strlen(dir), len, q, p;
	if (dl + sizeof "/cpu.max" > sizeof path)
		return 0;
	memcpy(path, dir, dl);
	memcpy(path + dl, "/cpu.max", sizeof "/cpu.max");
	if (hz_os_read_file(path, buf, sizeof buf - 1, &len))
		return 0;
	buf[len] = 0;
	const char *sp = strchr(buf, ' ');
	return !number(buf, &q) && sp && !number(sp + 1, &p) ? quota_cpus(q, p) : 0;
}

/* The least CPU quota from the process's group up to its hierarchy's
 * root. Unknown (no /proc, no /sys): none, as the CPU set then bounds
 * the helpers. */
static void read_cpu_quota(void)
{
	char group[sizeof hz_limits.dir], dir[sizeof hz_limits.dir];
	int version = own_group("cpu", group, sizeof group - sizeof "/sys/fs/cgroup/cpu");
	if (!version)
		return;
	struct walk w = {version == 1 ? "/sys/fs/cgroup/cpu" : V2_BASE, group, strlen(group), 0, 0};
	unsigned best = 0;
	while (walk_next(&w, dir, sizeof dir)) {
		unsigned c = quota_of(dir, version);
		if (c && (!best || c < best))
			best = c;
	}
	hz_limits.cpu_quota = best;
}

void hz_limits_read(void)
{
	hz_os_memory(&hz_limits.ram, &hz_limits.swap);
	hz_os_address_limits(&hz_limits.as, &hz_limits.data);
	char buf[16];
	size_t len;
	hz_limits.overcommit = 0;
	if (!hz_os_read_file("/proc/sys/vm/overcommit_memory", buf, sizeof buf, &len) && buf[0] >= '0' &&
	    buf[0] <= '2')
		hz_limits.overcommit = buf[0] - '0';
	read_cgroup();
	read_cpu_quota();
}

void hz_limits_refresh(void)
{
	if (hz_limits.cgroup_version) {
		size_t l = limit_of(hz_limits.dir, hz_limits.cgroup_version);
		__atomic_store_n(&hz_limits.cgroup, l, __ATOMIC_RELAXED);
	}
}

size_t hz_limits_usage(void)
{
	if (__atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED) == HZ_LIMIT_NONE)
		return HZ_LIMIT_NONE;
	return read_number(hz_limits.dir, hz_limits.cgroup_version == 1 ? "memory.usage_in_bytes"
									 : "memory.current");
}

size_t hz_limits_reclaimable(void)
{
	char path[sizeof hz_limits.dir + 32], buf[8192];
	size_t dl = strlen(hz_limits.dir), len, v;
	const char *key = hz_limits.cgroup_version == 1 ? "\ntotal_inactive_file " : "\ninactive_file ";
	if (dl + sizeof "/memory.stat" > sizeof path)
		return 0;
	memcpy(path, hz_limits.dir, dl);
	memcpy(path + dl, "/memory.stat", sizeof "/memory.stat");
	buf[0] = '\n'; /* so that the first line matches as the others */
	if (hz_os_read_file(path, buf + 1, sizeof buf - 1, &len))
		return 0;
	const char *at = strstr(buf, key);
	return at && !number(at + strlen(key), &v) ? v : 0;
}

size_t hz_limits_max_block(size_t address_space)
{
	size_t most = address_space, total = hz_limits.ram + hz_limits.swap;
	if (hz_limits.overcommit != 1 && hz_limits.ram && total < most)
		most = total;
	if (hz_limits.as < most)
		most = hz_limits.as;
	if (hz_limits.data < most)
		most = hz_limits.data;
	return most;
}
