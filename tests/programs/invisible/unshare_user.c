/* invisible-env: HUGEZERO_THREADS=2 */
/* invisible-needs: root idle */
/* Calls that need a single-threaded process: unshare(CLONE_NEWUSER), and
 * setns into a mount namespace (CLONE_NEWNS; the fs attributes must not be
 * shared with another thread), fail with EINVAL where the process has
 * more than one thread. A program of one thread may make them after
 * large allocations, as container runtimes, sandboxes and unshare(1)-like
 * tools do; the library's threads (helpers, the background zeroer) must
 * not make it fail. After the call, large memsets still work and are
 * still split over the helpers, a helper taking part (helpers.fills and
 * helpers.filled_bytes grow: the idle namespace shows an idle core).
 *
 * Variants, each a process of its own:
 *   after_malloc  malloc(64 MiB) and a memset of it (the helpers start),
 *                 then unshare(CLONE_NEWUSER)
 *   after_zeroer  callocs and frees of 16 MiB blocks (the background
 *                 zeroer starts, no helper: below 64 MiB), then
 *                 unshare(CLONE_NEWUSER)
 *   setns_mnt     /proc/self/ns/mnt opened, malloc(256 MiB) and a memset,
 *                 then setns(fd, CLONE_NEWNS) into that namespace (root)
 * In the library's run the threads in question must have been started
 * before the call, or the case judges nothing. */
#include "invisible.h"

#include <fcntl.h>
#include <sched.h>

/* A large memset after the call: every byte written, and in the
 * library's run split over the helpers with a helper's part in it
 * (helpers.fills and helpers.filled_bytes grow; the helpers, started
 * again by the malloc, may be slow to wake on a busy machine: tries for
 * up to 8 s). */
static void memset_after(const char *call)
{
	const size_t n = (size_t)128 << 20;
	unsigned char *p = malloc(n);
	if (!p)
		fail("malloc(%zu MiB) after %s", n >> 20, call);
	memset(p, 0, n);
	int split = !under_hz(), helped = split;
	for (uint64_t end = now_ns() + 8000000000u, tries = 0; !helped && now_ns() < end; tries++) {
		uint64_t f0 = counter("helpers.fills"), w0 = counter("helpers.filled_bytes");
		if (tries) /* helpers that missed every offer wake at an allocation only */
			free(malloc((size_t)64 << 20));
		memset(p, 0x33, n);
		split |= counter("helpers.fills") > f0;
		helped = counter("helpers.filled_bytes") > w0;
	}
	if (!split)
		fail("after %s, no large memset is split over the helpers any more (tried for 8 s)", call);
	if (!helped)
		unjudged("after %s, no helper took part in a large memset for 8 s (was a core idle?)", call);
	memset(p, 0x77, n);
	if (first_not(p, 0x77, n) != n)
		fail("memset after %s: byte %zu not written", call, first_not(p, 0x77, n));
	free(p);
}

static const char *after(void)
{
	return under_hz() ? "memsets after it split, a helper taking part" : "memsets after it right";
}

static void new_user_ns(const char *after)
{
	if (unshare(CLONE_NEWUSER)) {
		int e = errno;
		if (!under_hz() && (e == EPERM || e == ENOSPC || e == EUSERS))
			skip("unshare(CLONE_NEWUSER): %s (user namespaces not allowed here)", strerror(e));
		fail("unshare(CLONE_NEWUSER) after %s: %s", after, strerror(e));
	}
}

static int after_malloc(void)
{
	const size_t n = (size_t)64 << 20;
	unsigned char *p = malloc(n);
	if (!p)
		fail("malloc(64 MiB)");
	memset(p, 0x11, n);
	if (under_hz() && !counter("helpers.starts"))
		fail("no helper was started by malloc(64 MiB): the case judges nothing");
	new_user_ns("malloc(64 MiB) and memset");
	if (first_not(p, 0x11, n) != n)
		fail("the block's bytes changed");
	free(p);
	memset_after("unshare(CLONE_NEWUSER)");
	note("unshare(CLONE_NEWUSER) after malloc(64 MiB): ok, %s", after());
	return 0;
}

static int after_zeroer(void)
{
	const size_t n = (size_t)16 << 20;
	for (int i = 0; i < 8; i++) {
		unsigned char *p = calloc(1, n);
		if (!p)
			fail("calloc(16 MiB)");
		memset(p, 0x22, n);
		free(p);
	}
	if (under_hz() && !counter("background.running"))
		fail("the background zeroer is not running after callocs and frees of 16 MiB (background.starts "
		     "%llu): the case judges nothing",
		     (unsigned long long)counter("background.starts"));
	new_user_ns("callocs and frees of 16 MiB");
	unsigned char *p = calloc(1, n);
	if (!p || first_not(p, 0, n) != n)
		fail("calloc(16 MiB) after unshare: %s", p ? "not zero" : "NULL");
	free(p);
	memset_after("unshare(CLONE_NEWUSER)");
	note("unshare(CLONE_NEWUSER) after callocs and frees of 16 MiB: ok, %s", after());
	return 0;
}

static int setns_mnt(void)
{
	int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		skip("/proc/self/ns/mnt: %s", strerror(errno));
	const size_t n = (size_t)256 << 20;
	unsigned char *p = malloc(n);
	if (!p)
		fail("malloc(256 MiB)");
	memset(p, 0x44, n);
	if (under_hz() && !counter("helpers.starts"))
		fail("no helper was started by malloc(256 MiB): the case judges nothing");
	if (setns(fd, CLONE_NEWNS)) {
		int e = errno;
		if (!under_hz() && e == EPERM)
			skip("setns(CLONE_NEWNS): %s", strerror(e));
		fail("setns(CLONE_NEWNS) after malloc(256 MiB) and memset: %s", strerror(e));
	}
	close(fd);
	free(p);
	memset_after("setns(CLONE_NEWNS)");
	note("setns(CLONE_NEWNS) after malloc(256 MiB) and memset: ok, %s", after());
	return 0;
}

int main(int argc, char **argv)
{
	static const struct variant v[] = {
		{"after_malloc", after_malloc, 20}, {"after_zeroer", after_zeroer, 20}, {"setns_mnt", setns_mnt, 20}};
	return run_variants(argc, argv, v, sizeof v / sizeof *v);
}
