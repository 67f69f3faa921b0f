/* Fresh memory: its place and its page size, measured (fresh.c). */
#include <errno.h>
#include <pthread.h>

#include "../arch/common.h"
#include "../os/os.h"
#include "allocator.h"

int hz_thp;
static enum hz_fresh_mode mode;
static int huge;                      /* the decision: huge pages for new mappings */
static int thp_works = 1;             /* the last probe got a huge page */
static int probing;                   /* one measurement at a time */
static uint64_t probed_at;            /* hz_os_now_ns of the last, 0 before */
static int reporting = -1;            /* hz_os_free_page_reporting, once known */
static uint64_t probes, switches, huge_ns, small_ns, huge_maps, small_maps, thp_advised,
	thp_refused, readvised;
/* The recent first touches of fresh huge pages, wherever they were timed,
 * in ns; and the recent densities, the share of a watched fresh block's
 * pages the program touched, in 1/1024ths. */
#define RECENT 5
static uint64_t recent[RECENT], recent_next, dense[RECENT], dense_next, smalls[RECENT], smalls_next;

void hz_fresh_setup(int thp, enum hz_fresh_mode m)
{
	hz_thp = thp;
	mode = m;
	huge = m == HZ_FRESH_HUGE; /* auto: small until measured */
}

/* ---- the place ---- */

/* The next place to try, as an offset into the window: a bump pointer
 * that wraps, starting at a random 64 MiB slot of the window's first
 * quarter (the layout differs from process to process, as the kernel's
 * own placement does). After a wrap, the places freed since are found
 * again. */
static uintptr_t cursor;
/* Set once a mapping in the window worked: from then on ENOMEM there is
 * memory or address space running out (an rlimit), which a mapping
 * anywhere else, over-mapped for its alignment, could only make worse. */
static int window_works;

int hz_fresh_place(size_t size, int hugetlb, void **out)
{
	size_t step = hz_round_up(size, HZ_CHUNK_SIZE);
	if (step && step <= HZ_REG_WINDOW / 4) {
		uintptr_t expect = 0, start = (hz_os_random64() % (HZ_REG_WINDOW / 4 >> HZ_CHUNK_SHIFT))
						<< HZ_CHUNK_SHIFT;
		__atomic_compare_exchange_n(&cursor, &expect, start, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		for (int tries = 0; tries < 16; tries++) {
			uintptr_t off = __atomic_fetch_add(&cursor, step, __ATOMIC_RELAXED) & (HZ_REG_WINDOW - 1);
			if (off + step > HZ_REG_WINDOW)
				continue; /* across the end: the next one wraps */
			void *at = (void *)(HZ_REG_WINDOW_LO + off);
			int e = hz_os_map_at(at, size, hugetlb);
			if (!e) {
				__atomic_store_n(&window_works, 1, __ATOMIC_RELAXED);
				*out = at;
				return 0;
			}
			if (e != EEXIST && __atomic_load_n(&window_works, __ATOMIC_RELAXED))
				return ENOMEM;
			if (e != EEXIST)
				break;
		}
	}
	int e = hugetlb ? hz_os_map_hugetlb(size, HZ_CHUNK_SIZE, out)
			: hz_os_map(size, HZ_CHUNK_SIZE, out);
	if (e)
		return ENOMEM;
	if (!hz_reg_in_first_window(*out, size))
		hz_reg_widen();
	return 0;
}

/* ---- the page size ---- */

/* MADV_HUGEPAGE, counted: mappings the kernel took the advice for, and
 * refused (THP disabled for the process or not built). */
static void advise_huge(void *p, size_t size)
{
	if (hz_os_hugepage(p, size))
		__atomic_fetch_add(&thp_refused, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&thp_advised, 1, __ATOMIC_RELAXED);
}

void hz_fresh_advise_moved(void *p, size_t size)
{
	if (hz_thp)
		advise_huge(p, size);
}

int hz_fresh_sampling(void)
{
	return mode == HZ_FRESH_AUTO && hz_thp;
}

/* The median of a ring of RECENT values of which `all` were ever written
 * (the dearer middle one of an even count); 0 when there are none. */
static uint64_t median_of(const uint64_t *ring, const uint64_t *all)
{
	uint64_t v[RECENT], written = __atomic_load_n(all, __ATOMIC_RELAXED);
	unsigned n = written < RECENT ? (unsigned)written : RECENT;
	for (unsigned i = 0; i < n; i++) {
		uint64_t x = __atomic_load_n(&ring[i], __ATOMIC_RELAXED);
		unsigned j = i;
		for (; j && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return n ? v[n / 2] : 0;
}

static void push(uint64_t *ring, uint64_t *all, uint64_t x)
{
	uint64_t i = __atomic_fetch_add(all, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&ring[i % RECENT], x, __ATOMIC_RELAXED);
}

/* Auto: huge pages while the recent huge pages' first touch costs no more
 * than the small faults it replaces: the 512 of the last probe, times the
 * share of a fresh block's pages the program has recently touched (a huge
 * page of a sparse block holds memory, and costs a clear of 2 MiB, that
 * its few small faults would not). Until a block has been watched, small
 * pages, as every other allocator takes them. Nothing else decides: where
 * the host backs free memory slowly, the samples show it. */
static void decide_now(void)
{
	if (mode != HZ_FRESH_AUTO)
		return;
	uint64_t s = median_of(smalls, &smalls_next), h = median_of(recent, &recent_next);
	if (!s)
		return; /* nothing to hold the samples against yet */
	int want = __atomic_load_n(&thp_works, __ATOMIC_RELAXED) && __atomic_load_n(&dense_next, __ATOMIC_RELAXED) &&
		   h * 1024 <= s * median_of(dense, &dense_next);
	if (__atomic_exchange_n(&huge, want, __ATOMIC_RELAXED) != want)
		__atomic_fetch_add(&switches, 1, __ATOMIC_RELAXED);
}

void hz_fresh_sample(uint64_t ns)
{
	push(recent, &recent_next, ns);
	decide_now();
}

/* ---- density: how much of a fresh block the program touches ---- */

/* One block watched at a time: handed out all fresh, a slice of it on
 * small pages (its range advised so where its mapping asked for huge
 * ones: WATCH_SLICE in the block's middle, aligned to huge pages, the rest
 * of a large block keeps its huge pages), its resident pages counted at
 * the block's free, or at a large allocation WATCH_NS after it was handed
 * out, whichever comes first; then its advice restored. A new one as soon
 * as the last is read until RECENT were, then one a WATCH_EVERY_NS. */
#define WATCH_NS ((uint64_t)10 * 1000000u)
#define WATCH_EVERY_NS ((uint64_t)1000000000u)
#define WATCH_SLICE (2 * HZ_HUGE_SIZE)
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *watched;  /* the block, or NULL */
static unsigned char *slice;    /* the part of it counted */
static size_t slice_pages;
static uint64_t watched_at, watch_ended;
static int watch_readvise; /* the slice was advised small for the watch */
static uint64_t watches;

int hz_fresh_watch(void *block, void *p, size_t size, int advice, int populated)
{
	uint64_t now = hz_os_now_ns();
	if (!hz_fresh_sampling() || __atomic_load_n(&watched, __ATOMIC_RELAXED) ||
	    (__atomic_load_n(&dense_next, __ATOMIC_RELAXED) >= (populated ? 1 : RECENT) &&
	     now - __atomic_load_n(&watch_ended, __ATOMIC_RELAXED) < WATCH_EVERY_NS) ||
	    pthread_mutex_trylock(&watch_lock))
		return 0;
	int took = !watched;
	if (took) {
		unsigned char *b = p;
		size_t len = size;
		if (size >= 2 * WATCH_SLICE) {
			b = (unsigned char *)hz_round_up((uintptr_t)p + size / 2 - WATCH_SLICE / 2, HZ_HUGE_SIZE);
			len = WATCH_SLICE;
			took = 2;
		}
		slice = b;
		slice_pages = len >> HZ_PAGE_SHIFT;
		watched_at = now;
		watch_readvise = advice == HZ_ADVISED_HUGE;
		if (watch_readvise)
			hz_os_nohugepage(b, len);
		__atomic_store_n(&watched, (unsigned char *)block, __ATOMIC_RELEASE);
		watches++;
	}
	pthread_mutex_unlock(&watch_lock);
	return took;
}

int hz_fresh_watched(const void *block, size_t *lo, size_t *hi)
{
	if (hz_likely(__atomic_load_n(&watched, __ATOMIC_ACQUIRE) != block))
		return 0;
	pthread_mutex_lock(&watch_lock);
	int is = watched == block;
	if (is) {
		*lo = (size_t)(slice - (const unsigned char *)block);
		*hi = *lo + (slice_pages << HZ_PAGE_SHIFT);
	}
	pthread_mutex_unlock(&watch_lock);
	return is;
}

/* Reads the watched block when it is p, or (p NULL) when it has been
 * watched long enough, and ends the watch. */
static void end_watch(const void *p)
{
	pthread_mutex_lock(&watch_lock);
	uint64_t now = hz_os_now_ns();
	size_t resident;
	if (watched && (p ? watched == p : now - watched_at >= WATCH_NS)) {
		if (!hz_os_count_resident(slice, slice_pages, &resident))
			push(dense, &dense_next, resident * 1024 / slice_pages);
		decide_now();
		if (watch_readvise && __atomic_load_n(&huge, __ATOMIC_RELAXED))
			advise_huge(slice, slice_pages << HZ_PAGE_SHIFT);
		__atomic_store_n(&watched, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&watch_ended, now, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&watch_lock);
}

void hz_fresh_freed(const void *p)
{
	if (hz_unlikely(__atomic_load_n(&watched, __ATOMIC_RELAXED) == p))
		end_watch(p);
}

/* The probe's small pages: an eighth of a huge page's, timed and counted
 * eight times, so that a probe adds little to a small program's peak. */
#define PROBE_SMALL (HZ_HUGE_SIZE / 8)

/* The first touch of a fresh huge page (a sample) and of fresh small
 * pages, whose time, scaled to 512, is the figure the samples are held
 * against (the median of the recent probes': a probe preempted midway
 * times too long). No huge page to be had (THP refused): small. */
int hz_fresh_probe(void)
{
	void *h, *s;
	if (hz_os_map(HZ_HUGE_SIZE, HZ_HUGE_SIZE, &h))
		return __atomic_load_n(&huge, __ATOMIC_RELAXED);
	if (hz_os_map(PROBE_SMALL, hz_page_size, &s)) {
		hz_os_unmap(h, HZ_HUGE_SIZE);
		return __atomic_load_n(&huge, __ATOMIC_RELAXED);
	}
	int thp = !hz_os_hugepage(h, HZ_HUGE_SIZE);
	hz_os_nohugepage(s, PROBE_SMALL);
	uint64_t t[3];
	t[0] = hz_os_now_ns();
	((volatile char *)h)[0] = 1;
	t[1] = hz_os_now_ns();
	/* MADV_HUGEPAGE is taken where THP is "never" too: a huge page is
	 * one whose second small page came with the first. */
	thp = thp && hz_os_resident((char *)h + hz_page_size);
	for (size_t i = 0; i < PROBE_SMALL; i += hz_page_size)
		((volatile char *)s)[i] = 1;
	t[2] = hz_os_now_ns();
	hz_os_unmap(h, HZ_HUGE_SIZE);
	hz_os_unmap(s, PROBE_SMALL);
	uint64_t h_ns = t[1] - t[0], s_ns = (t[2] - t[1]) * (HZ_HUGE_SIZE / PROBE_SMALL);
	__atomic_store_n(&huge_ns, h_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&small_ns, s_ns, __ATOMIC_RELAXED);
	push(smalls, &smalls_next, s_ns);
	__atomic_store_n(&thp_works, thp, __ATOMIC_RELAXED);
	__atomic_fetch_add(&probes, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&probed_at, hz_os_now_ns() | 1, __ATOMIC_RELAXED);
	if (thp)
		hz_fresh_sample(h_ns);
	else
		decide_now();
	return thp && h_ns <= s_ns;
}

int hz_fresh_decide(void)
{
	if (__atomic_load_n(&reporting, __ATOMIC_RELAXED) < 0) /* reported, not a rule */
		__atomic_store_n(&reporting, hz_os_free_page_reporting(), __ATOMIC_RELAXED);
	if (mode == HZ_FRESH_AUTO && __atomic_load_n(&watched, __ATOMIC_RELAXED))
		end_watch(NULL);
	return __atomic_load_n(&huge, __ATOMIC_RELAXED);
}

int hz_fresh_probe_due(int again)
{
	uint64_t last = __atomic_load_n(&probed_at, __ATOMIC_RELAXED);
	return mode == HZ_FRESH_AUTO && hz_thp && __atomic_load_n(&dense_next, __ATOMIC_RELAXED) &&
	       (last ? hz_os_now_ns() - last >= HZ_FRESH_REPROBE_NS : !again);
}

void hz_fresh_probe_if_due(int again)
{
	if (hz_fresh_probe_due(again) && !__atomic_exchange_n(&probing, 1, __ATOMIC_ACQUIRE)) {
		if (hz_fresh_probe_due(again)) /* not done meanwhile */
			hz_fresh_probe();
		__atomic_store_n(&probing, 0, __ATOMIC_RELEASE);
	}
}

/* A new mapping, [p, p+size): advised for huge pages or for small ones,
 * as last decided; with huge pages, its first one touched and timed (a
 * sample: its first block will use it). */
static int advise_new(void *p, size_t size)
{
	if (!__atomic_load_n(&huge, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&small_maps, 1, __ATOMIC_RELAXED);
		hz_os_nohugepage(p, size);
		return HZ_ADVISED_SMALL;
	}
	__atomic_fetch_add(&huge_maps, 1, __ATOMIC_RELAXED);
	advise_huge(p, size);
	if (mode != HZ_FRESH_AUTO || size < HZ_HUGE_SIZE)
		return HZ_ADVISED_HUGE;
	uint64_t t0 = hz_os_now_ns();
	*(volatile char *)p = 0; /* the zero it reads as */
	hz_fresh_sample(hz_os_now_ns() - t0);
	return HZ_ADVISED_HUGE;
}

int hz_fresh_advice_now(int advice)
{
	if (advice == HZ_ADVISED_NONE || !hz_fresh_sampling())
		return advice;
	return __atomic_load_n(&huge, __ATOMIC_RELAXED) ? HZ_ADVISED_HUGE : HZ_ADVISED_SMALL;
}

void hz_fresh_readvise(void *p, size_t size, int advice)
{
	__atomic_fetch_add(&readvised, 1, __ATOMIC_RELAXED);
	if (advice == HZ_ADVISED_HUGE)
		advise_huge(p, size);
	else
		hz_os_nohugepage(p, size);
}

int hz_fresh_map(size_t size, int *hugetlb, int *advice, void **out)
{
	*advice = HZ_ADVISED_NONE;
	if (*hugetlb && !hz_fresh_place(size, 1, out))
		return 0;
	*hugetlb = 0;
	if (hz_fresh_place(size, 0, out))
		return ENOMEM;
	/* THP may be unavailable (disabled for the process, or not built
	 * in): the mapping then works on small pages. */
	if (hz_thp)
		*advice = advise_new(*out, size);
	return 0;
}

void hz_fresh_fork_prepare(void)
{
	pthread_mutex_lock(&watch_lock);
}

void hz_fresh_fork_parent(void)
{
	pthread_mutex_unlock(&watch_lock);
}

void hz_fresh_fork_child(void)
{
	__atomic_store_n(&probing, 0, __ATOMIC_RELAXED);
	/* The parent's figures stand for a child's first 10 s: a child that
	 * maps a block and exits (a fork per request) never pays a probe. */
	__atomic_store_n(&probed_at, hz_os_now_ns() | 1, __ATOMIC_RELAXED);
}

void hz_fresh_stats(struct hz_fresh_stats *out)
{
	out->probes = __atomic_load_n(&probes, __ATOMIC_RELAXED);
	out->samples = __atomic_load_n(&recent_next, __ATOMIC_RELAXED);
	out->switches = __atomic_load_n(&switches, __ATOMIC_RELAXED);
	out->huge_ns = __atomic_load_n(&huge_ns, __ATOMIC_RELAXED);
	out->recent_huge_ns = median_of(recent, &recent_next);
	out->density = __atomic_load_n(&dense_next, __ATOMIC_RELAXED) ? median_of(dense, &dense_next) : 0;
	out->watches = __atomic_load_n(&watches, __ATOMIC_RELAXED);
	out->readvised = __atomic_load_n(&readvised, __ATOMIC_RELAXED);
	out->small_ns = __atomic_load_n(&small_ns, __ATOMIC_RELAXED);
	out->huge_maps = __atomic_load_n(&huge_maps, __ATOMIC_RELAXED);
	out->small_maps = __atomic_load_n(&small_maps, __ATOMIC_RELAXED);
	out->thp_advised = __atomic_load_n(&thp_advised, __ATOMIC_RELAXED);
	out->thp_refused = __atomic_load_n(&thp_refused, __ATOMIC_RELAXED);
	out->huge = __atomic_load_n(&huge, __ATOMIC_RELAXED);
	out->thp = __atomic_load_n(&thp_works, __ATOMIC_RELAXED);
	out->reporting = __atomic_load_n(&reporting, __ATOMIC_RELAXED) > 0;
}
