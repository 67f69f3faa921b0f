/* The counters (counters.c): per-thread blocks, taken at a thread's first
 * count and passed on at its exit, reset in a forked child, summed for
 * the report. */
#include <pthread.h>
#include <stdio.h>

#include "../os/os.h"
#include "obs.h"

HZ_TLS struct hz_tstats *hz_tstats_self;
const char *const hz_op_names[HZ_OPS] = {"malloc", "calloc", "realloc", "free", "memset"};

static pthread_mutex_t tstats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hz_tstats *tstats_all;  /* every block made: pushed, never taken out */
static struct hz_tstats *tstats_free; /* exited threads' blocks; under the lock */
/* Counts made where a thread has no block of its own: after its exit
 * handler (another library's destructor), or where no memory could be
 * mapped for one. Shared, so such counts may be lost; summed. */
static struct hz_tstats tstats_late;
static char *carve, *carve_end; /* blocks not yet handed out; under the lock */
static pthread_key_t tstats_key;
static int tstats_key_ok;

static void add(struct hz_tstats *to, const struct hz_tstats *from)
{
	for (int o = 0; o < HZ_OPS; o++)
		for (int k = 0; k < HZ_CLASSES; k++) {
			to->calls[o][k] += from->calls[o][k];
			to->bytes[o][k] += from->bytes[o][k];
		}
	for (int k = 0; k < HZ_MAX_KERNELS; k++) {
		to->kcalls[k] += from->kcalls[k];
		to->kbytes[k] += from->kbytes[k];
	}
	to->memset_chk_calls += from->memset_chk_calls;
	to->hinted_calls += from->hinted_calls;
}

/* Thread exit (a key destructor): its block, counts kept, is there for
 * the next thread to take; the thread counts into the shared one. */
static void tstats_exit(void *arg)
{
	struct hz_tstats *t = arg;
	/* Left before it is passed on: a signal handler's count from here
	 * on goes to the shared block, not to one another thread took. */
	hz_tstats_self = &tstats_late;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&tstats_lock);
	t->next_free = tstats_free;
	tstats_free = t;
	pthread_mutex_unlock(&tstats_lock);
}

/* Blocks are carved out of mappings of POOL_BLOCKS, made where a system
 * call is allowed (the library's start; a large block's malloc once
 * fewer than POOL_LOW are left): a count, memset's among them, makes
 * none. 64 blocks are 350 KiB of address space, which counts against
 * RLIMIT_AS and RLIMIT_DATA (the library's footprint at its start stays
 * within 2 MiB of glibc's); only the blocks threads take are touched.
 * A program with more than 64 threads alive that count and no large
 * malloc among them counts the rest into the shared block. */
#define POOL_BLOCKS 64
#define POOL_LOW 16
#define BLOCK_SIZE hz_round_up(sizeof(struct hz_tstats), 64)
int hz_tstats_low;

/* A block no thread counts into, under the lock: an exited thread's, or
 * a new one (zero, *fresh set). NULL where the mappings are spent. */
static struct hz_tstats *take_locked(int *fresh)
{
	struct hz_tstats *t = tstats_free;
	if (t) {
		tstats_free = t->next_free;
		return t;
	}
	if ((size_t)(carve_end - carve) < POOL_LOW * BLOCK_SIZE)
		__atomic_store_n(&hz_tstats_low, 1, __ATOMIC_RELAXED);
	if ((size_t)(carve_end - carve) < BLOCK_SIZE)
		return NULL;
	t = (struct hz_tstats *)carve;
	carve += BLOCK_SIZE;
	*fresh = 1;
	return t;
}

void hz_counters_reserve(void)
{
	void *m;
	size_t len = hz_round_up(POOL_BLOCKS * BLOCK_SIZE, hz_page_size);
	if (hz_os_map(len, hz_page_size, &m)) {
		/* Tried again once a thread finds the blocks low again, not at
		 * every large malloc (a mapping refused under ulimit -v stays
		 * refused a while). */
		__atomic_store_n(&hz_tstats_low, 0, __ATOMIC_RELAXED);
		return;
	}
	pthread_mutex_lock(&tstats_lock);
	if ((size_t)(carve_end - carve) < POOL_LOW * BLOCK_SIZE) {
		/* What is left of the old mapping (never touched) stays unused. */
		carve = m;
		carve_end = carve + len;
		m = NULL;
		__atomic_store_n(&hz_tstats_low, 0, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&tstats_lock);
	if (m)
		hz_os_unmap(m, len);
}

/* Never waits, and makes no system call: counting may happen in memset,
 * and in a signal handler that interrupted this very function or a
 * report. Where the lock is busy or the mappings are spent, the count
 * goes to the shared block, and a later one tries again. A block that
 * has never counted joins the list of every block (a push that needs no
 * lock). */
struct hz_tstats *hz_tstats_take(void)
{
	struct hz_tstats *t = NULL;
	int fresh = 0;
	if (pthread_mutex_trylock(&tstats_lock))
		return &tstats_late;
	t = take_locked(&fresh);
	pthread_mutex_unlock(&tstats_lock);
	if (!t)
		return &tstats_late;
	if (fresh) {
		struct hz_tstats *head = __atomic_load_n(&tstats_all, __ATOMIC_RELAXED);
		do
			t->next = head;
		while (!__atomic_compare_exchange_n(&tstats_all, &head, t, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	}
	/* The thread's at once (a signal handler's count from here on goes
	 * to it), then the key, so that the block is passed on at the
	 * thread's exit. The main thread's never is (exit runs no key
	 * destructors). */
	hz_tstats_self = t;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (tstats_key_ok)
		pthread_setspecific(tstats_key, t);
	return t;
}

void hz_tstats_sum(struct hz_tstats *out)
{
	/* No lock: the list only grows at its head, each block linked
	 * before it is published, so a thread taking its block at the same
	 * time never waits for a report. */
	hz_memzero(out, sizeof *out);
	add(out, &tstats_late);
	for (struct hz_tstats *t = __atomic_load_n(&tstats_all, __ATOMIC_ACQUIRE); t; t = t->next)
		add(out, t);
}

/* fork: the lock is taken around it; the child counts from zero (the
 * engine's counters too): every block cleared, and every block but the
 * calling thread's there to take again (the other threads are not in
 * the child). */
void hz_counters_fork_prepare(void)
{
	pthread_mutex_lock(&tstats_lock);
}

void hz_counters_fork_parent(void)
{
	pthread_mutex_unlock(&tstats_lock);
}

void hz_counters_fork_child(void)
{
	/* The forking thread's block, and the one its key names (they
	 * differ only where a signal handler took a block between the two). */
	struct hz_tstats *me = hz_tstats_self, *keyed = tstats_key_ok ? pthread_getspecific(tstats_key) : NULL;
	hz_memzero(&tstats_late, sizeof tstats_late);
	tstats_free = NULL;
	for (struct hz_tstats *t = tstats_all; t; t = t->next) {
		struct hz_tstats *next = t->next;
		hz_memzero(t, sizeof *t);
		t->next = next;
		if (t != me && t != keyed) {
			t->next_free = tstats_free;
			tstats_free = t;
		}
	}
	pthread_mutex_unlock(&tstats_lock);
}

void hz_counters_setup(void)
{
	tstats_key_ok = !pthread_key_create(&tstats_key, tstats_exit);
}
