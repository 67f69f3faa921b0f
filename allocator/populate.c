/* Population of fresh blocks (populate.c): where the program is expected
 * to touch a new block, its pages are faulted in by one call per 2 MiB
 * step (MADV_POPULATE_WRITE) instead of one fault per page; "expected"
 * is learned per size class from what the program touched of its recent
 * blocks; large blocks are populated over the helpers (helpers.c). */
#include <errno.h>

#include "../os/os.h"
#include "allocator.h"

static int mode = HZ_POPULATE_AUTO;
static struct hz_populate_stats n;

static void add(uint64_t *v, uint64_t k)
{
	__atomic_fetch_add(v, k, __ATOMIC_RELAXED);
}

/* ---- the classes: how much of recent blocks of a size the program touched ---- */

/* A quarter of a power of two: 2 MiB, 2.5 MiB, 3 MiB, 3.5 MiB, 4 MiB, ...
 * (nothing smaller is populated). */
#define CLASS_MIN_SHIFT 21
#define CLASSES (4 * (64 - CLASS_MIN_SHIFT))
struct class {
	uint16_t density; /* touched share, in 1/1024ths: the recent blocks' average */
	uint8_t samples;  /* blocks read, up to 255 */
	uint8_t handed;   /* blocks populated, for the one in EXPLORE left alone */
};
static struct class classes[CLASSES];

static unsigned class_of(size_t size)
{
	if (size < ((size_t)1 << CLASS_MIN_SHIFT))
		return 0;
	unsigned l = 63 - (unsigned)__builtin_clzll(size);
	return 4 * (l - CLASS_MIN_SHIFT) + (unsigned)((size >> (l - 2)) & 3);
}

/* Populated where the recent blocks of the class were mostly touched:
 * three quarters of their pages, in the page size they had (a huge page
 * touched at one byte costs its whole clear either way). */
#define DENSE 768
/* A populated block with no sentinel step (see below) is left
 * unpopulated one time in EXPLORE and read instead, so that its class is
 * learned again when the program changes. */
#define EXPLORE 8

/* The class learns a block's touched share: the average of its last few
 * (each new one weighs a quarter). Racy updates lose a sample, no more. */
static void learn(unsigned c, uint64_t share)
{
	struct class *k = &classes[c];
	uint64_t d = __atomic_load_n(&k->samples, __ATOMIC_RELAXED) ? (3 * (uint64_t)k->density + share) / 4 : share;
	__atomic_store_n(&k->density, (uint16_t)d, __ATOMIC_RELAXED);
	if (k->samples < 255)
		__atomic_store_n(&k->samples, (uint8_t)(k->samples + 1), __ATOMIC_RELAXED);
	add(&n.samples, 1);
}

/* ---- tracked blocks: populated, or read for their class ---- */

/* In a block of at least SENTINEL_EVERY steps, step SENTINEL_EVERY / 2 of
 * every SENTINEL_EVERY is a sentinel: never populated, it is faulted in
 * by the program only where the program touches it, and the share of its
 * pages in memory, read at the block's free, is the block's touched share
 * (and what of its population the program never used). A sentinel the
 * program touches costs it what its population would have. */
#define SENTINEL_EVERY 16
/* A block is read at its free, or at a large allocation once it has been
 * handed out READ_NS plus the time the program takes to write it at
 * READ_BYTES_PER_S (a program may never free it; one filling a large
 * block gradually must not be read as sparse). At most READ_STEPS steps
 * of a block are read, evenly spread. */
#define READ_NS ((uint64_t)10 * 1000000u)
#define READ_BYTES_PER_S ((uint64_t)2 << 30)
#define READ_STEPS 32
/* With the helpers, a calloc populates the first 1/EARLY_PART of the
 * block, where the program touches first, before it may leave. */
#define EARLY_PART 8

enum kind { READ_ALL, READ_SENTINELS, POPULATED };
/* A slot's states, and who moves it from one to the next:
 *   FREE -> TAKING         slot_take (compare-and-swap), filling its fields
 *   TAKING -> POPULATING   slot_take, the block published last: its allocation populates it
 *   TAKING -> LIVE         slot_take, for a block only to be read (READ_ALL)
 *   POPULATING -> LIVE     the allocation's end (helpers may still take steps: an early calloc)
 *   LIVE -> ENDING         a free of its block, or read_due once no step is left (compare-and-swap)
 *   ENDING -> FREE         whoever moved it to ENDING, its job ended and its block read
 * A slot whose job a helper is still in a step of (an end that passed its
 * bound) is not taken again until the step is over. */
enum { FREE, TAKING, POPULATING, LIVE, ENDING };
struct track {
	struct hz_job job;    /* its steps */
	unsigned char *block; /* the block, published with its state (NULL: none) */
	uint64_t due;         /* when a large allocation reads it, hz_os_now_ns */
	unsigned cls;
	int kind;
	int state;
};
#define SLOTS 32
static struct track slots[SLOTS];
static int tracked; /* slots not free, for a free that finds none at once */

static unsigned char *block_of(struct track *t)
{
	return __atomic_load_n(&t->block, __ATOMIC_ACQUIRE);
}

/* How long after its handout a block is read: READ_NS plus the time to
 * write size bytes at READ_BYTES_PER_S (no overflow up to HZ_HUGE_MAX). */
static uint64_t read_delay(size_t size)
{
	uint64_t s = size;
	return READ_NS + s / READ_BYTES_PER_S * 1000000000u + s % READ_BYTES_PER_S * 1000000000u / READ_BYTES_PER_S;
}

/* A free slot for p, taken (POPULATING when it will be populated, else
 * LIVE); NULL when every slot is in use. */
static struct track *slot_take(void *p, size_t size, int kind)
{
	for (int i = 0; i < SLOTS; i++) {
		struct track *t = &slots[i];
		int free = FREE;
		if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != FREE ||
		    __atomic_load_n(&t->job.in_step, __ATOMIC_SEQ_CST) ||
		    __atomic_load_n(&t->job.holders, __ATOMIC_SEQ_CST) ||
		    !__atomic_compare_exchange_n(&t->state, &free, TAKING, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		hz_job_init(&t->job, HZ_JOB_POPULATE, p, size);
		if (kind == READ_SENTINELS) {
			t->job.skip_every = SENTINEL_EVERY;
			t->job.skip_at = SENTINEL_EVERY / 2;
		}
		if (kind != READ_ALL) /* else nothing to populate */
			hz_job_open(&t->job);
		t->due = hz_os_now_ns() + read_delay(size);
		t->cls = class_of(size);
		t->kind = kind;
		__atomic_fetch_add(&tracked, 1, __ATOMIC_RELAXED);
		/* Published last: whoever finds the block finds every field. */
		__atomic_store_n(&t->block, (unsigned char *)p, __ATOMIC_RELEASE);
		__atomic_store_n(&t->state, kind == READ_ALL ? LIVE : POPULATING, __ATOMIC_RELEASE);
		return t;
	}
	add(&n.untracked, 1);
	return NULL;
}

/* The pages in memory of t's steps to read (sentinels, or any), at most
 * READ_STEPS of them evenly spread; *pages gets how many pages were read.
 * (size_t)-1 when mincore refused. */
static size_t resident_in(const struct track *t, int sentinels, size_t *pages)
{
	size_t in = 0, k, candidates = sentinels ? t->job.steps / SENTINEL_EVERY : t->job.steps;
	size_t stride = candidates > READ_STEPS ? candidates / READ_STEPS : 1;
	*pages = 0;
	for (size_t c = 0; c < candidates; c += stride) {
		size_t s = sentinels ? c * SENTINEL_EVERY + SENTINEL_EVERY / 2 : c;
		unsigned char *lo, *hi;
		hz_job_step_range(&t->job, s, &lo, &hi);
		if (hz_os_count_resident(lo, (size_t)(hi - lo) >> HZ_PAGE_SHIFT, &k))
			return (size_t)-1;
		in += k;
		*pages += (size_t)(hi - lo) >> HZ_PAGE_SHIFT;
	}
	return in;
}

/* Ends t's job (the steps in flight waited for, boundedly: a population
 * step changes no byte), reads its touched share into its class and
 * frees the slot; the caller moved it to ENDING. */
static void end_and_read(struct track *t)
{
	int cancel = hz_os_cancel_off(); /* never left half way */
	hz_job_end(&t->job, 1);
	size_t pages, in, populated = __atomic_load_n(&t->job.done, __ATOMIC_RELAXED);
	if (t->kind == READ_ALL || t->kind == READ_SENTINELS) {
		in = resident_in(t, t->kind == READ_SENTINELS, &pages);
		if (in != (size_t)-1 && pages) {
			uint64_t share = in * 1024 / pages;
			learn(t->cls, share);
			if (t->kind == READ_SENTINELS) {
				add(&n.program_faulted_bytes, (uint64_t)in << HZ_PAGE_SHIFT);
				add(&n.untouched_bytes, populated / 1024 * (1024 - share));
			}
		}
	} else {
		/* No sentinel: the class's figure stands for it. */
		uint64_t d = __atomic_load_n(&classes[t->cls].density, __ATOMIC_RELAXED);
		add(&n.untouched_bytes, populated / 1024 * (1024 - (d > 1024 ? 1024 : d)));
	}
	__atomic_store_n(&t->block, NULL, __ATOMIC_RELEASE);
	__atomic_fetch_sub(&tracked, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->state, FREE, __ATOMIC_RELEASE);
	hz_os_cancel_restore(cancel);
}

/* Whether t's population is over: every step claimed, none in flight. */
static int settled(struct track *t)
{
	return hz_job_claimed(&t->job) >= t->job.steps && !__atomic_load_n(&t->job.in_step, __ATOMIC_SEQ_CST);
}

/* Reads one block that is due and whose population is over (a large
 * allocation of another thread may be reading: then none). Waits for no
 * helper. */
static void read_due(void)
{
	uint64_t now = hz_os_now_ns();
	for (int i = 0; i < SLOTS; i++) {
		struct track *t = &slots[i];
		int live = LIVE;
		if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != LIVE || (int64_t)(now - t->due) < 0 || !settled(t) ||
		    !__atomic_compare_exchange_n(&t->state, &live, ENDING, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		end_and_read(t);
		return;
	}
}

void hz_populate_freed(const void *p)
{
	if (hz_likely(!__atomic_load_n(&tracked, __ATOMIC_RELAXED)))
		return;
	for (int i = 0; i < SLOTS; i++) {
		struct track *t = &slots[i];
		if (block_of(t) != p)
			continue;
		for (;;) {
			int st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
			if (block_of(t) != p || st == FREE || st == TAKING)
				return; /* ended by a reader meanwhile */
			if (st == LIVE && __atomic_compare_exchange_n(&t->state, &st, ENDING, 0, __ATOMIC_ACQUIRE,
								      __ATOMIC_RELAXED)) {
				end_and_read(t);
				return;
			}
			hz_os_yield(); /* a reader ends it: never waiting for a helper */
		}
	}
}

/* ---- the decision ---- */

/* Whether a memory cgroup is near its limit: the block would bring its
 * usage, less the page cache the kernel drops first, within a quarter of
 * it. No population there: what the program never touches would push the
 * group into reclaim. Where the usage cannot be read, it is near. */
static int pressed(size_t size)
{
	size_t limit = __atomic_load_n(&hz_limits.cgroup, __ATOMIC_RELAXED);
	if (limit == HZ_LIMIT_NONE)
		return 0;
	size_t usage = hz_limits_usage();
	if (usage == HZ_LIMIT_NONE)
		return 1;
	if (usage + size + limit / 4 <= limit)
		return 0;
	size_t cache = hz_limits_reclaimable();
	usage = cache < usage ? usage - cache : 0;
	return usage + size + limit / 4 > limit;
}

int hz_populate_wanted(size_t size)
{
	int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
	if (m == HZ_POPULATE_OFF || size < HZ_JOB_STEP)
		return 0;
	if (__atomic_load_n(&tracked, __ATOMIC_RELAXED))
		read_due();
	struct class *k = &classes[class_of(size)];
	return m == HZ_POPULATE_ON || (__atomic_load_n(&k->samples, __ATOMIC_RELAXED) &&
				       __atomic_load_n(&k->density, __ATOMIC_RELAXED) >= DENSE);
}

/* Population without a slot: by this thread, around the watched range
 * [lo, hi) when watched; not learnt. */
static void populate_untracked(unsigned char *p, size_t size, int watched, size_t lo, size_t hi)
{
	size_t done = 0;
	if (!watched)
		lo = hi = size;
	if (lo && !hz_os_populate(p, lo))
		done += lo;
	if (hi < size && !hz_os_populate(p + hi, size - hi))
		done += size - hi;
	add(&n.bytes, done);
	add(&n.blocks, done != 0);
}

void hz_populate_block(void *p, size_t size, size_t fresh, int wanted, int zero)
{
	int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
	/* Mostly in memory already (recycled pages): nothing to learn or do. */
	if (m == HZ_POPULATE_OFF || fresh < size / 2 || size < HZ_JOB_STEP)
		return;
	if (wanted && pressed(size)) {
		add(&n.pressed, 1);
		wanted = 0;
	}
	if (!wanted) {
		slot_take(p, size, READ_ALL); /* read for its class */
		return;
	}
	/* Sentinels where the steps are whole huge pages of the block's own
	 * (a step populated beside a sentinel that shared its huge page would
	 * fault the sentinel in). */
	int sentinels = hz_job_span(p, size) >= SENTINEL_EVERY && !((uintptr_t)p & (HZ_JOB_STEP - 1));
	struct class *k = &classes[class_of(size)];
	uint8_t h = __atomic_fetch_add(&k->handed, 1, __ATOMIC_RELAXED);
	if (m == HZ_POPULATE_AUTO && !sentinels && h % EXPLORE == EXPLORE - 1) {
		add(&n.explored, 1);
		slot_take(p, size, READ_ALL);
		return;
	}
	size_t lo = 0, hi = 0;
	int watched = hz_fresh_watched(p, &lo, &hi);
	if (watched && lo == 0 && hi >= size)
		return; /* all of it watched on small pages: left to the program */
	struct track *t = slot_take(p, size, sentinels ? READ_SENTINELS : POPULATED);
	if (!t) {
		populate_untracked(p, size, watched, lo, hi);
		return;
	}
	struct hz_job *j = &t->job;
	if (watched) {
		j->skip_lo = ((uintptr_t)p + lo - j->first) / HZ_JOB_STEP;
		j->skip_hi = (hz_round_up((uintptr_t)p + hi, HZ_JOB_STEP) - j->first) / HZ_JOB_STEP;
	}
	/* Large blocks: the helpers take steps beside this thread, which
	 * never waits for one. A calloc leaves once it populated the first
	 * part and a helper took a step: the rest is the helper's, ahead of
	 * the program's loop over the block. A malloc stays until no step is
	 * left: its program writes the block whole next (a JVM's memset),
	 * a clear the helpers can then share, which they could not while
	 * still populating (measured: 1 GiB malloc and memset, 49 ms against
	 * 69; calloc and a loop, 49 against 70 the other way). */
	int shared = size >= HZ_HELPERS_MIN && hz_helpers_offer(j);
	size_t early = shared && zero ? (j->steps + EARLY_PART - 1) / EARLY_PART : 0;
	size_t done = hz_job_steps(j, j->gen, 0, early);
	if (shared && !j->early)
		hz_helpers_withdraw(j);
	if (j->failed == EINVAL) /* no MADV_POPULATE_WRITE (Linux 5.14): never again */
		__atomic_store_n(&mode, HZ_POPULATE_OFF, __ATOMIC_RELAXED);
	add(&n.bytes, done); /* the helpers' are counted by them */
	add(&n.early, j->early);
	add(&n.blocks, done || j->early);
	__atomic_store_n(&t->state, LIVE, __ATOMIC_RELEASE);
}

void hz_populate_setup(int m)
{
	mode = m;
}

void hz_populate_fork_child(void)
{
	/* No block is tracked (the parent's steps in flight are the
	 * parent's); the counters start from zero; the classes stand. */
	for (int i = 0; i < SLOTS; i++) {
		slots[i].block = NULL;
		slots[i].job.holders = slots[i].job.in_step = 0;
		slots[i].state = FREE;
	}
	tracked = 0;
	n = (struct hz_populate_stats){0};
}

void hz_populate_stats(struct hz_populate_stats *out)
{
	struct hz_helpers_stats h;
	hz_helpers_stats(&h);
	out->bytes = __atomic_load_n(&n.bytes, __ATOMIC_RELAXED) + h.populated;
	out->blocks = __atomic_load_n(&n.blocks, __ATOMIC_RELAXED);
	out->untouched_bytes = __atomic_load_n(&n.untouched_bytes, __ATOMIC_RELAXED);
	out->program_faulted_bytes = __atomic_load_n(&n.program_faulted_bytes, __ATOMIC_RELAXED);
	out->samples = __atomic_load_n(&n.samples, __ATOMIC_RELAXED);
	out->explored = __atomic_load_n(&n.explored, __ATOMIC_RELAXED);
	out->pressed = __atomic_load_n(&n.pressed, __ATOMIC_RELAXED);
	out->untracked = __atomic_load_n(&n.untracked, __ATOMIC_RELAXED);
	out->early = __atomic_load_n(&n.early, __ATOMIC_RELAXED);
	out->mode = __atomic_load_n(&mode, __ATOMIC_RELAXED);
}
