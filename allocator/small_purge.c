/* What the embedded jemalloc gives back at once (small_purge.c).
 *
 * jemalloc releases an arena's free pages at once (MADV_DONTNEED) when
 * the last thread assigned to it exits or moves away, whatever its decay
 * settings (unless its own background threads run). A program that
 * starts its workers again and again (a pool resized, a thread per task
 * or per connection) then has every page of their arenas released at
 * each generation's end and faulted in again by the next:
 * mimalloc-bench's mstress took 0.53 M faults, tcmalloc 78 K. Its
 * madvise is renamed to the one below (scripts/jemalloc-rename.sh), which
 * refuses MADV_DONTNEED unless a purge was asked for (malloc_trim, a
 * memory cgroup's pressure, mallctl's arena purge): jemalloc then frees
 * the pages lazily (MADV_FREE), as its decay does here (small.c), and
 * knows they may not read zero. The kernel takes them back first when it
 * needs memory; the next thread takes them without a fault. And the
 * thread caches' purge of every free extent at their arena's last
 * thread's exit becomes the arena's decay (hz_je_tcache_decay below). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "allocator.h"

static int started;
static HZ_TLS int asked;

/* Only where the kernel frees lazily (MADV_FREE, Linux 4.5): without it
 * jemalloc would keep the refused pages for good (its retained extents,
 * which no purge reaches). */
void hz_small_purge_started(void)
{
	void *page;
	if (hz_os_map(hz_page_size, hz_page_size, &page))
		return;
	int lazy = hz_os_advise(page, hz_page_size, MADV_FREE) == 0;
	hz_os_unmap(page, hz_page_size);
	if (lazy)
		__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
}

int hz_je_madvise(void *p, size_t len, int advice)
{
	/* Its start's check that MADV_DONTNEED zeroes pages runs as it is. */
	if (advice == MADV_DONTNEED && !asked && __atomic_load_n(&started, __ATOMIC_ACQUIRE))
		return -1; /* errno untouched: free preserves it */
	int e = hz_os_advise(p, len, advice);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

/* jemalloc's arena_decay (5.x: tsdn, arena, is_background_thread, all),
 * as its thread caches call it (scripts/jemalloc-rename.sh): they ask
 * for all only when the exiting thread was its arena's last, and the
 * decay then frees every free extent, one madvise (and one TLB shootdown
 * of every core the process runs on) each: mstress's threads, started
 * again and again, made 16.7 K such calls. The free pages stay in the
 * arena instead, as with its other threads: for the next thread given
 * it, its decay (which advances with the arena's calls), a trim or a
 * cgroup's pressure. */
void hz_je_je_arena_decay(void *tsdn, void *arena, _Bool is_background_thread, _Bool all);
void hz_je_tcache_decay(void *tsdn, void *arena, _Bool is_background_thread, _Bool all)
{
	(void)all;
	hz_je_je_arena_decay(tsdn, arena, is_background_thread, 0);
}

/* An arena's purge, reset or destruction (arena.<i>.purge, .reset,
 * .destroy): the pages go back at once. */
static int purges(const char *name)
{
	const char *last = strrchr(name, '.');
	return !strncmp(name, "arena.", 6) && last &&
	       (!strcmp(last, ".purge") || !strcmp(last, ".reset") || !strcmp(last, ".destroy"));
}

int hz_small_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
	int was = asked;
	asked |= purges(name);
	int r = hz_je_mallctl(name, oldp, oldlenp, newp, newlen);
	asked = was;
	return r;
}
