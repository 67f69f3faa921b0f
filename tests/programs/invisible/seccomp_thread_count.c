/* A thread's first counted memset makes no system call: each of 100
 * threads, alive at once until all have counted, installs a seccomp filter of its own (no
 * TSYNC: the other threads keep theirs) that kills it on mmap, munmap or
 * mprotect, then memsets 1 MiB. Under glibc memset makes none; under
 * the library the count takes the thread's block of counts, which must
 * come from blocks mapped ahead, not from a mapping made there (more
 * threads than those count into a shared block). Every thread reports
 * its bytes right; the library's memset.large.calls counts between half
 * of the calls and all of them (a thread that found the lock busy
 * counts into the shared block, where counts made at once may be lost). */
#include "invisible.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define THREADS 100
#define SIZE ((size_t)1 << 20)

static unsigned char *buf[THREADS];
static int done[THREADS];
static pthread_barrier_t ready;
static int counted_n; /* threads past their memset */

#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_THREAD)

static void *one(void *arg)
{
	int i = (int)(intptr_t)arg;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		DENY(SYS_mmap),
		DENY(SYS_munmap),
		DENY(SYS_mprotect),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return (void *)1;
	/* Every thread filtered before any of them counts. */
	pthread_barrier_wait(&ready);
	memset(buf[i], 0x40 + i % 64, SIZE);
	done[i] = first_not(buf[i], (unsigned char)(0x40 + i % 64), SIZE) == SIZE ? 1 : 2;
	/* And none exits (passing its block on) before all have counted:
	 * up to 5 s, as a thread the filter killed never arrives. */
	__atomic_add_fetch(&counted_n, 1, __ATOMIC_ACQ_REL);
	for (int k = 0; k < 5000 && __atomic_load_n(&counted_n, __ATOMIC_ACQUIRE) < THREADS; k++)
		sleep_ns(1000000u);
	return NULL;
}

int main(void)
{
	if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		skip("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	for (int i = 0; i < THREADS; i++)
		if (!(buf[i] = malloc(SIZE)))
			fail("malloc(1 MiB)");
	uint64_t before = under_hz() ? counter("memset.large.calls") : 0;
	if (pthread_barrier_init(&ready, NULL, THREADS))
		fail("pthread_barrier_init");
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, one, (void *)(intptr_t)i))
			fail("pthread_create: %s", strerror(errno));
	for (int i = 0; i < THREADS; i++) {
		void *r;
		if (pthread_join(th[i], &r))
			fail("pthread_join");
		if (r)
			skip("seccomp: %s", strerror(errno));
	}
	for (int i = 0; i < THREADS; i++)
		if (done[i] != 1)
			fail("thread %d %s", i, done[i] ? "left bytes unwritten" : "was killed by its filter");
	if (under_hz()) {
		uint64_t calls = counter("memset.large.calls") - before;
		if (calls < THREADS / 2 || calls > THREADS)
			fail("memset.large.calls rose by %llu for %d threads", (unsigned long long)calls, THREADS);
		note("memset in %d new filtered threads: %llu counted", THREADS, (unsigned long long)calls);
	}
	for (int i = 0; i < THREADS; i++)
		free(buf[i]);
	return 0;
}
