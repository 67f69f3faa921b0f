/* The public API (include/hugezero.h) of the built libhugezero.so, which
 * this program is linked with: the clears and their bad input, the
 * counters by name. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../include/hugezero.h"
#include "../util/fillcheck.h"
#include "../util/guard.h"

Test(api, clear_and_pages)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	struct guarded g;
	cr_assert_eq(guarded_alloc(&g, 40 * ps), 0);
	memset(g.base, 0x77, g.len);
	cr_assert_eq(hz_clear(g.base + 1, g.len - 2), g.base + 1);
	size_t bad;
	cr_assert(all_bytes(g.base + 1, g.len - 2, 0, &bad));
	cr_assert_eq(g.base[0], 0x77);
	cr_assert_eq(g.base[g.len - 1], 0x77);

	memset(g.base, 0x77, g.len);
	cr_assert_eq(hz_clear_pages(g.base + ps, 38), 0);
	cr_assert(all_bytes(g.base + ps, 38 * ps, 0, &bad));
	cr_assert(all_bytes(g.base, ps, 0x77, &bad));
	cr_assert(all_bytes(g.base + 39 * ps, ps, 0x77, &bad));
	cr_assert_eq(hz_clear_pages(g.base, 0), 0);

	errno = 0;
	cr_assert_eq(hz_clear_pages(g.base + 1, 1), -1, "unaligned pointer");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(hz_clear_pages(g.base, SIZE_MAX / ps + 1), -1, "size overflow");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(hz_clear_pages(g.base, SIZE_MAX / ps), -1, "extent past the address space");
	cr_assert_eq(errno, EINVAL);
	cr_assert(all_bytes(g.base, ps, 0x77, &bad), "a refused call wrote");
	guarded_free(&g);
}

Test(api, counters)
{
	size_t n = (size_t)1 << 20;
	unsigned char *p = malloc(n);
	cr_assert_not_null(p);
	uint64_t before, after, kb, ka;
	const char *k = hz_kernel_for(0, n);
	char name[64];
	snprintf(name, sizeof name, "kernel.%s.bytes", k);
	cr_assert_eq(hz_stat("hinted.calls", &before), 0);
	cr_assert_eq(hz_stat(name, &kb), 0, "%s", name);
	hz_clear_hinted(p, n, p + 4096);
	cr_assert_eq(hz_stat("hinted.calls", &after), 0);
	cr_assert_eq(after, before + 1);
	cr_assert_eq(hz_stat(name, &ka), 0);
	cr_assert_gt(ka, kb, "%s did not grow", name);
	cr_assert_eq(hz_stat("no.such.counter", &after), ENOENT);
	cr_assert_eq(hz_stat("kernel.c.nothing", &after), ENOENT);
	free(p);
}

/* The report on demand: an unknown format is EINVAL, and a report that
 * cannot be written (stderr on a full device) is -1 with the write's
 * errno. */
Test(api, stats_dump_errors)
{
	errno = 0;
	cr_assert_eq(hz_stats_dump("stderr", "xml"), -1);
	cr_assert_eq(errno, EINVAL);
	int full = open("/dev/full", O_WRONLY), saved = dup(2);
	cr_assert(full >= 0 && saved >= 0);
	cr_assert_eq(dup2(full, 2), 2);
	errno = 0;
	int rc = hz_stats_dump("stderr", "text");
	int e = errno;
	dup2(saved, 2);
	close(saved);
	close(full);
	cr_assert_eq(rc, -1);
	cr_assert_eq(e, ENOSPC, "errno %d", e);
	cr_assert_eq(hz_stats_dump("stderr", "json"), 0);
}
