/* The life of the library's background threads, written once (crew.c):
 * the zeroer's one thread and the helpers are each a crew. What a crew's
 * threads do is their owner's; when they may start, how they lower and
 * raise themselves, how they end for a fork, a quiesce or exit, is here.
 * The states, in allocator.h beside struct hz_crew. */
#define _GNU_SOURCE /* pthread_cond_clockwait (glibc 2.30) */
#include <pthread.h>
#include <time.h>

#include "../os/os.h"
#include "allocator.h"

/* A forked child starts none until it has lived this long: a child that
 * maps a block and exits has no use for them. */
#define CHILD_WAIT_NS ((uint64_t)1000000000u)

void hz_crew_timespec(uint64_t at, struct timespec *ts)
{
	ts->tv_sec = (time_t)(at / 1000000000u);
	ts->tv_nsec = (long)(at % 1000000000u);
}

int hz_crew_may_start(struct hz_crew *c)
{
	uint64_t child_at = __atomic_load_n(&c->child_at, __ATOMIC_RELAXED);
	return __atomic_load_n(&c->allowed, __ATOMIC_ACQUIRE) && !__atomic_load_n(&c->never, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&c->ending, __ATOMIC_RELAXED) &&
	       (!child_at || hz_os_now_ns() - child_at >= CHILD_WAIT_NS);
}

unsigned hz_crew_reserve(struct hz_crew *c, unsigned want, uint64_t *gen)
{
	unsigned k = 0;
	want = want < HZ_CREW_MAX ? want : HZ_CREW_MAX;
	if (hz_crew_may_start(c))
		for (int i = 0; i < HZ_CREW_MAX && c->running < want; i++)
			if (c->slot[i] == HZ_CREW_FREE) {
				c->slot[i] = HZ_CREW_STARTING;
				c->running++;
				k++;
			}
	*gen = c->gen;
	return k;
}

void hz_crew_started(struct hz_crew *c, uint64_t gen, int e)
{
	__atomic_fetch_add(e ? &c->start_failures : &c->starts, 1, __ATOMIC_RELAXED);
	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < HZ_CREW_MAX && c->gen == gen; i++)
		if (c->slot[i] == HZ_CREW_STARTING) {
			c->slot[i] = HZ_CREW_FREE;
			c->running--;
			break;
		}
	pthread_mutex_unlock(&c->lock);
}

int hz_crew_enter(struct hz_crew *c, uint64_t gen)
{
	/* Lowered before its id is published: a waiter may raise it again. */
	enum hz_sched s = hz_os_sched_background();
	__atomic_store_n(&c->sched_got, (int)s, __ATOMIC_RELAXED);
	if (s != HZ_SCHED_IDLE)
		__atomic_fetch_add(&c->sched_fallbacks, 1, __ATOMIC_RELAXED);
	int slot = -1;
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < HZ_CREW_MAX && slot < 0 && c->gen == gen; i++)
		if (c->slot[i] == HZ_CREW_STARTING) {
			c->tid[i] = hz_os_thread_id();
			__atomic_store_n(&c->slot[i], HZ_CREW_RUNNING, __ATOMIC_RELEASE);
			slot = i;
		}
	pthread_mutex_unlock(&c->lock);
	return slot;
}

void hz_crew_leave_locked(struct hz_crew *c, int slot, uint64_t gen)
{
	if (slot >= 0 && c->gen == gen) {
		__atomic_store_n(&c->slot[slot], HZ_CREW_FREE, __ATOMIC_RELEASE);
		c->tid[slot] = c->raised[slot] = 0;
		c->running--;
	}
	pthread_cond_broadcast(&c->wake);
}

int hz_crew_must_end(struct hz_crew *c, uint64_t gen)
{
	return __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE) != gen || __atomic_load_n(&c->ending, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&c->never, __ATOMIC_ACQUIRE);
}

void hz_crew_lower(struct hz_crew *c, int slot)
{
	if (slot < 0 || !__atomic_load_n(&c->raised[slot], __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&c->lock);
	int lower = c->raised[slot];
	c->raised[slot] = 0;
	pthread_mutex_unlock(&c->lock);
	if (lower)
		hz_os_sched_background();
}

int hz_crew_raise(struct hz_crew *c)
{
	if (pthread_mutex_trylock(&c->lock))
		return -1;
	int any = 0;
	/* Every running one, whether raised already or not: one may have
	 * lowered itself since (hz_crew_lower clears its flag first). */
	for (int i = 0; i < HZ_CREW_MAX; i++)
		if (c->slot[i] == HZ_CREW_RUNNING && !hz_os_sched_inherit(c->tid[i]))
			any = c->raised[i] = 1;
	pthread_mutex_unlock(&c->lock);
	return any;
}

int hz_crew_quiesce(struct hz_crew *c, int forever, uint64_t bound_ns)
{
	if (forever)
		__atomic_store_n(&c->never, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&c->ending, 1, __ATOMIC_RELEASE);
	/* The lock waited for boundedly: a thread of the crew, starved at
	 * SCHED_IDLE, may hold it. Without it, the flags above end the
	 * threads when they next run, and none is waited for. */
	struct timespec ts;
	hz_crew_timespec(hz_os_now_ns() + bound_ns, &ts);
	if (pthread_mutex_clocklock(&c->lock, CLOCK_MONOTONIC, &ts)) {
		int was = (int)__atomic_load_n(&c->running, __ATOMIC_RELAXED);
		__atomic_store_n(&c->ending, 0, __ATOMIC_RELEASE);
		return was;
	}
	int was = (int)c->running;
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->lock);
	/* One in a step ends it first: raised, so that a starved one does not
	 * hold the caller for seconds; waited for, boundedly (a tenth of the
	 * bound where none could be raised: never long for a starved one). */
	int raised = -1;
	for (int i = 0; i < 1000 && (raised = hz_crew_raise(c)) < 0; i++)
		hz_os_yield(); /* the lock's holder, preempted */
	uint64_t end = hz_os_now_ns() + (raised || !was ? bound_ns : bound_ns / 10);
	hz_crew_timespec(end, &ts);
	if (pthread_mutex_clocklock(&c->lock, CLOCK_MONOTONIC, &ts)) {
		__atomic_store_n(&c->ending, 0, __ATOMIC_RELEASE);
		return was;
	}
	while (c->running && hz_os_now_ns() < end)
		pthread_cond_clockwait(&c->wake, &c->lock, CLOCK_MONOTONIC, &ts);
	/* One starved past the bound keeps its slot (its work, the zeroer's
	 * claim, is its own until it ends): it goes on, or ends when it next
	 * runs after exit or a filter (never). */
	__atomic_store_n(&c->ending, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
	return was;
}

/* The process's seccomp mode when the library's constructor ended: a
 * filter installed after it (a raw seccomp(2), libseccomp's
 * seccomp_load), which a new thread would inherit, was written for the
 * program's own calls. */
static int mode_at_start = -1;

int hz_crew_filtered(struct hz_crew *c)
{
	int now = hz_os_seccomp_mode(), then = __atomic_load_n(&mode_at_start, __ATOMIC_RELAXED);
	if (now <= 0 || (then >= 0 && now <= then))
		return 0;
	__atomic_store_n(&c->never, 1, __ATOMIC_RELEASE);
	return 1;
}

void hz_crew_allow(struct hz_crew *c, int allowed)
{
	if (allowed && __atomic_load_n(&mode_at_start, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&mode_at_start, hz_os_seccomp_mode(), __ATOMIC_RELAXED);
	pthread_mutex_lock(&c->lock);
	__atomic_store_n(&c->allowed, allowed, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
}

void hz_crew_fork_prepare(struct hz_crew *c)
{
	pthread_mutex_lock(&c->lock);
}

void hz_crew_fork_parent(struct hz_crew *c)
{
	pthread_mutex_unlock(&c->lock);
}

void hz_crew_fork_child(struct hz_crew *c)
{
	/* None of the parent's threads is in the child; a quiesce in flight
	 * is the parent's. Its counters start from zero. */
	c->gen++;
	c->running = 0;
	c->ending = 0;
	for (int i = 0; i < HZ_CREW_MAX; i++) {
		c->slot[i] = HZ_CREW_FREE;
		c->tid[i] = c->raised[i] = 0;
	}
	c->child_at = hz_os_now_ns();
	c->starts = c->start_failures = c->sched_fallbacks = 0;
	pthread_mutex_unlock(&c->lock);
	pthread_cond_init(&c->wake, NULL);
}
