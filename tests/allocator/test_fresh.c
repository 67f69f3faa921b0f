/* Fresh memory (fresh.c), linked with fresh.c, the registry and the OS
 * only: where new mappings go (the window, aligned, none twice; when the
 * window is full, anywhere, and the window widens), and the page-size
 * decision with its counters, in each HUGEZERO_FRESH mode. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../allocator/allocator.h"

/* Runs fn in a child (the placement's cursor and the decision are for
 * the life of a process): its exit status. */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(fn());
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* Whether the window's first slot is free: not where another mapping
 * holds the window (AddressSanitizer's shadow covers its first 2 GiB on
 * x86-64), where placements may rightly go elsewhere. */
static int window_free(void)
{
	if (hz_os_map_at((void *)HZ_REG_WINDOW_LO, HZ_CHUNK_SIZE, 0))
		return 0;
	hz_os_unmap((void *)HZ_REG_WINDOW_LO, HZ_CHUNK_SIZE);
	return 1;
}

static int places_in_window(void)
{
	hz_os_init();
	if (!window_free())
		return 10;
	void *p[8];
	for (int i = 0; i < 8; i++) {
		size_t size = (size_t)(i + 1) * HZ_HUGE_SIZE;
		int hugetlb = 0, advice;
		if (hz_fresh_map(size, &hugetlb, &advice, &p[i]))
			return 1;
		if ((uintptr_t)p[i] % HZ_CHUNK_SIZE || !hz_reg_in_first_window(p[i], size))
			return 2;
		for (int j = 0; j < i; j++)
			if (p[i] == p[j])
				return 3;
		((volatile char *)p[i])[size - 1] = 1; /* mapped, writable */
	}
	if (!hz_reg_in_window(p[0]) || hz_reg_in_window(&p))
		return 4; /* not widened */
	return 0;
}

/* fn in a child: passes at 0, skips with why at 10, else fails at its
 * step. */
static void step_in_child(int (*fn)(void), const char *why)
{
	int r = in_child(fn);
	if (r == 10)
		cr_skip_test("%s", why);
	cr_assert_eq(r, 0, "step %d", r);
}

Test(fresh, places_in_the_window)
{
	step_in_child(places_in_window, "another mapping holds the window (AddressSanitizer's shadow)");
}

/* The whole window taken by another mapping (PROT_NONE, no memory): the
 * placement finds no room, maps anywhere, and widens the window. */
static int widens_when_full(void)
{
	hz_os_init();
	void *w = mmap((void *)HZ_REG_WINDOW_LO, HZ_REG_WINDOW, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (w != (void *)HZ_REG_WINDOW_LO)
		return 10; /* cannot set the case up */
	void *p;
	if (hz_fresh_place(HZ_CHUNK_SIZE, 0, &p))
		return 1;
	if (hz_reg_in_first_window(p, HZ_CHUNK_SIZE) || (uintptr_t)p % HZ_CHUNK_SIZE)
		return 2;
	if (!hz_reg_in_window(&p) || !hz_reg_in_window(p))
		return 3; /* widened: every address asks the table */
	return 0;
}

Test(fresh, widens_when_the_window_is_full)
{
	step_in_child(widens_when_full, "the window could not be reserved by the test");
}

/* Each mode: the counters of one new mapping. */
static int decide(int thp, enum hz_fresh_mode mode, int expect_huge_maps, int expect_small_maps)
{
	hz_os_init();
	hz_fresh_setup(thp, mode);
	void *p;
	int hugetlb = 0, advice;
	if (hz_fresh_map(HZ_CHUNK_SIZE, &hugetlb, &advice, &p))
		return 1;
	struct hz_fresh_stats s;
	hz_fresh_stats(&s);
	if ((int)s.huge_maps != expect_huge_maps || (int)s.small_maps != expect_small_maps)
		return 2;
	if (advice != (!thp ? HZ_ADVISED_NONE : expect_huge_maps ? HZ_ADVISED_HUGE : HZ_ADVISED_SMALL))
		return 6; /* the advice handed back is the one given */
	if (hz_fresh_advice_now(advice) != advice)
		return 7; /* a forced mode never re-advises */
	if (expect_huge_maps && s.thp_advised + s.thp_refused != 1)
		return 3; /* the advice counted, taken or refused */
	if (!expect_huge_maps && s.thp_advised + s.thp_refused)
		return 4;
	if (mode != HZ_FRESH_AUTO && s.probes)
		return 5; /* a forced mode never measures */
	return 0;
}

static int forced_huge(void)
{
	return decide(1, HZ_FRESH_HUGE, 1, 0);
}
static int forced_small(void)
{
	return decide(1, HZ_FRESH_SMALL, 0, 1);
}
static int no_thp(void)
{
	return decide(0, HZ_FRESH_HUGE, 0, 0);
}

Test(fresh, forced_modes_and_no_thp)
{
	int r;
	cr_assert_eq(r = in_child(forced_huge), 0, "HUGEZERO_FRESH=huge: step %d", r);
	cr_assert_eq(r = in_child(forced_small), 0, "HUGEZERO_FRESH=small: step %d", r);
	cr_assert_eq(r = in_child(no_thp), 0, "HUGEZERO_THP=0, no advice either way: step %d", r);
}

/* Watches `pages` pages from page `from` of a fresh block in a new
 * small-advised mapping (a huge block is watched past its first huge
 * page), touches `touched` of them, frees it: 0, or a step that failed.
 * The watch is read at the block's free, not at its range's. */
static int watch_block(size_t pages, size_t touched, size_t from)
{
	void *p;
	int hugetlb = 0, advice;
	if (hz_fresh_map(HZ_CHUNK_SIZE, &hugetlb, &advice, &p))
		return 20;
	char *range = (char *)p + (from << 12);
	if (!hz_fresh_watch(p, range, pages << 12, advice, 0))
		return 21;
	if (hz_fresh_watch(range + (pages << 12), range + (pages << 12), pages << 12, advice, 0))
		return 22; /* one block at a time */
	for (size_t i = 0; i < touched; i++)
		((volatile char *)range)[(i * pages / touched) << 12] = 1;
	struct hz_fresh_stats s;
	hz_fresh_stats(&s);
	uint64_t before = s.watches;
	hz_fresh_freed((char *)p + 4096); /* not the block: no reading */
	if (from)
		hz_fresh_freed(range);
	hz_fresh_stats(&s);
	if (s.density == touched * 1024 / pages && touched * 1024 / pages != 0)
		return 24; /* read already */
	hz_fresh_freed(p);
	hz_fresh_stats(&s);
	if (s.watches != before || s.density != touched * 1024 / pages)
		return 23;
	hz_os_unmap(p, HZ_CHUNK_SIZE);
	return 0;
}

/* Auto, whatever the machine (free page reporting is only reported):
 * small pages, and no probe, until a watched block says how much of its
 * pages a program touches; then a probe is due, once in 10 s. */
static int auto_measures_when_it_matters(void)
{
	hz_os_init();
	hz_fresh_setup(1, HZ_FRESH_AUTO);
	struct hz_fresh_stats s;
	if (hz_fresh_decide() || hz_fresh_probe_due(0))
		return 1;
	hz_fresh_stats(&s);
	if (s.probes || s.huge)
		return 2;
	int r = watch_block(512, 512, 512);
	if (r)
		return r;
	if (!hz_fresh_probe_due(0) || hz_fresh_probe_due(1))
		return 3; /* the first probe is due, and not as a probe again */
	hz_fresh_probe_if_due(0);
	hz_fresh_stats(&s);
	if (s.probes != 1 || !s.small_ns || hz_fresh_probe_due(0))
		return 4;
	hz_fresh_probe_if_due(0);
	hz_fresh_stats(&s);
	if (s.probes != 1)
		return 5;
	return 0;
}

Test(fresh, auto_measures_when_it_matters)
{
	step_in_child(auto_measures_when_it_matters, "");
}

/* Auto follows what it measures: dense blocks and huge pages cheaper than
 * the small faults they replace, huge (where THP gives huge pages at
 * all); dearer, small; a sparse block makes small pages win even against
 * cheap huge ones. A chunk advised before a change is told to re-advise,
 * and re-advising is counted. */
static int auto_follows_samples(void)
{
	hz_os_init();
	hz_fresh_setup(1, HZ_FRESH_AUTO);
	int r = watch_block(1024, 1024, 0);
	if (r)
		return r;
	hz_fresh_probe_if_due(0); /* the small pages' figure */
	struct hz_fresh_stats s;
	hz_fresh_stats(&s);
	if (!s.small_ns)
		return 10;
	uint64_t before = s.samples;
	for (int i = 0; i < 5; i++)
		hz_fresh_sample(s.small_ns * 4 + 1000000);
	hz_fresh_stats(&s);
	if (s.huge || s.samples != before + 5 || s.recent_huge_ns <= s.small_ns)
		return 1;
	if (hz_fresh_advice_now(HZ_ADVISED_HUGE) != HZ_ADVISED_SMALL ||
	    hz_fresh_advice_now(HZ_ADVISED_NONE) != HZ_ADVISED_NONE)
		return 2;
	void *p;
	int hugetlb = 0, advice;
	if (hz_fresh_map(HZ_CHUNK_SIZE, &hugetlb, &advice, &p) || advice != HZ_ADVISED_SMALL)
		return 3;
	/* Two cheap samples do not outvote three dear ones; three do. The
	 * probe's own sample may or may not have switched already: count
	 * only the switch these samples cause. */
	uint64_t switched = s.switches;
	if (switched != 0 && switched != 2)
		return 11; /* the probe's switch to huge pages, and the dear samples' back, or neither */
	hz_fresh_sample(1);
	hz_fresh_sample(1);
	hz_fresh_stats(&s);
	if (s.huge)
		return 4;
	hz_fresh_sample(1);
	hz_fresh_stats(&s);
	if (s.huge != s.thp)
		return 5;
	if (s.thp && (hz_fresh_advice_now(HZ_ADVISED_SMALL) != HZ_ADVISED_HUGE || s.switches != switched + 1))
		return 6;
	hz_fresh_readvise(p, HZ_CHUNK_SIZE, HZ_ADVISED_HUGE);
	hz_fresh_stats(&s);
	if (s.readvised != 1)
		return 7;
	hz_os_unmap(p, HZ_CHUNK_SIZE);
	return 0;
}

Test(fresh, auto_follows_samples)
{
	step_in_child(auto_follows_samples, "");
}

/* A block the program touches sparsely (4 pages in 1024) keeps small
 * pages, however cheap huge pages are: a huge page would hold 2 MiB for
 * a few bytes. */
static int sparse_stays_small(void)
{
	hz_os_init();
	hz_fresh_setup(1, HZ_FRESH_AUTO);
	int r = watch_block(1024, 4, 0);
	if (r)
		return r;
	hz_fresh_probe_if_due(0);
	for (int i = 0; i < 5; i++)
		hz_fresh_sample(100000); /* 100 us: a quick clear of 2 MiB */
	struct hz_fresh_stats s;
	hz_fresh_stats(&s);
	if (!s.small_ns || s.density != 4)
		return 1;
	/* Small unless 512 small faults cost over 256 times a huge page's
	 * first touch (25.6 ms, 50 us a fault): on no machine measured. */
	if (s.huge != (s.small_ns * 4 >= (uint64_t)1024 * 100000))
		return 2;
	return 0;
}

Test(fresh, sparse_stays_small)
{
	step_in_child(sparse_stays_small, "");
}
