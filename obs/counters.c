/* The counters (counters.c): per-thread blocks, linked, folded at thread
 * exit, reset in a forked child, summed for the report. */
#include <pthread.h>
#include <stdio.h>

#include "obs.h"

HZ_TLS struct hz_tstats hz_tstats;
const char *const hz_op_names[HZ_OPS] = {"malloc", "calloc", "realloc", "free", "memset"};

static pthread_mutex_t tstats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hz_tstats *tstats_list; /* live threads' blocks */
static struct hz_tstats tstats_gone;  /* threads that exited */
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

static void unlink_locked(struct hz_tstats *t)
{
	for (struct hz_tstats **pp = &tstats_list; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
}

/* Thread exit (a key destructor, while the thread's TLS is still there):
 * its counts go to the totals, its block leaves the list for good. */
static void tstats_exit(void *arg)
{
	struct hz_tstats *t = arg;
	pthread_mutex_lock(&tstats_lock);
	unlink_locked(t);
	add(&tstats_gone, t);
	t->state = 2;
	pthread_mutex_unlock(&tstats_lock);
}

/* Never waits: counting may happen in a signal handler that interrupted
 * this very function or a report. When the lock is busy the block stays
 * unlinked for now and keeps counting; a later count links it. */
void hz_tstats_link(struct hz_tstats *t)
{
	/* The key first, whether or not the lock is had: a thread that exits
	 * before a later count links it still has its counts folded in (its
	 * destructor adds an unlinked block as a linked one). The key exists
	 * from setup on; a thread that counted before it (the main thread)
	 * is summed until exit anyway. */
	if (tstats_key_ok)
		pthread_setspecific(tstats_key, t);
	if (pthread_mutex_trylock(&tstats_lock))
		return;
	if (!t->state) {
		t->next = tstats_list;
		tstats_list = t;
		t->state = 1;
	}
	pthread_mutex_unlock(&tstats_lock);
}

void hz_tstats_sum(struct hz_tstats *out)
{
	hz_memzero(out, sizeof *out);
	pthread_mutex_lock(&tstats_lock);
	add(out, &tstats_gone);
	for (struct hz_tstats *t = tstats_list; t; t = t->next)
		add(out, t);
	pthread_mutex_unlock(&tstats_lock);
}

/* fork: the lock is taken around it; the child counts from zero (the
 * engine's counters too), with only its own thread's block. */
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
	struct hz_tstats *me = &hz_tstats;
	hz_memzero(&tstats_gone, sizeof tstats_gone);
	tstats_list = NULL;
	int linked = me->state == 1;
	hz_memzero(me, sizeof *me);
	if (linked) {
		me->state = 1;
		tstats_list = me;
	}
	pthread_mutex_unlock(&tstats_lock);
}

void hz_counters_setup(void)
{
	tstats_key_ok = !pthread_key_create(&tstats_key, tstats_exit);
}
