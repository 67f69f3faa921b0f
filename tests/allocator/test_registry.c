/* The address table and the window (registry.c), linked with the
 * registry and the OS only: entries set, read without a lock and
 * unregistered; leaves mapped on demand; the window's test before and
 * after it widens. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../allocator/allocator.h"

Test(registry, set_get_and_unregister)
{
	/* Slots of a range far from anything else of the process. */
	uintptr_t base = HZ_REG_WINDOW_LO + ((uintptr_t)123 << HZ_CHUNK_SHIFT);
	uintptr_t e = 0xabc0;
	cr_assert_eq(hz_reg_get((void *)base), 0, "nothing there yet");
	cr_assert_eq(hz_reg_set((void *)base, 3 * HZ_CHUNK_SIZE - 1, e), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(hz_reg_get((void *)(base + i * HZ_CHUNK_SIZE)), e, "slot %d", i);
		cr_assert_eq(hz_reg_get((void *)(base + i * HZ_CHUNK_SIZE + 12345)), e, "inside slot %d", i);
	}
	cr_assert_eq(hz_reg_get((void *)(base + 3 * HZ_CHUNK_SIZE)), 0, "the range ends at its last slot");
	cr_assert_eq(hz_reg_get((void *)(base - 1)), 0, "the slot before");
	cr_assert_eq(hz_reg_set((void *)base, HZ_CHUNK_SIZE, 0), 0);
	cr_assert_eq(hz_reg_get((void *)base), 0, "unregistered");
	cr_assert_eq(hz_reg_get((void *)(base + HZ_CHUNK_SIZE)), e, "the others stay");
	cr_assert_eq(hz_reg_set((void *)(base + HZ_CHUNK_SIZE), 2 * HZ_CHUNK_SIZE, 0), 0);
	/* Slots under different leaves: each leaf mapped when first needed. */
	uintptr_t far = (uintptr_t)HZ_REG_LEAF << HZ_CHUNK_SHIFT;
	cr_assert_eq(hz_reg_set((void *)(base + far), HZ_CHUNK_SIZE, e | HZ_REG_HUGE), 0);
	cr_assert_eq(hz_reg_get((void *)(base + far)), e | HZ_REG_HUGE);
	cr_assert_eq(hz_reg_get((void *)base), 0);
	cr_assert_eq(hz_reg_set((void *)(base + far), HZ_CHUNK_SIZE, 0), 0);
}

Test(registry, past_the_table)
{
	/* Beyond the 47-bit user address space: refused, and never found. */
	void *past = (void *)((uintptr_t)1 << 47);
	cr_assert_eq(hz_reg_set(past, HZ_CHUNK_SIZE, 0x1000), ENOMEM);
	cr_assert_eq(hz_reg_set((void *)(((uintptr_t)1 << 47) - HZ_CHUNK_SIZE), 2 * HZ_CHUNK_SIZE, 0x1000), ENOMEM,
		     "a range that runs past the end");
	cr_assert_eq(hz_reg_get(past), 0);
	cr_assert_eq(hz_reg_get((void *)~(uintptr_t)0), 0);
}

Test(registry, window_then_widened)
{
	/* Widening is for the life of the process: in a child. */
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int ok = hz_reg_in_window((void *)HZ_REG_WINDOW_LO) &&
			 hz_reg_in_window((void *)(HZ_REG_WINDOW_LO + HZ_REG_WINDOW - 1)) &&
			 !hz_reg_in_window((void *)(HZ_REG_WINDOW_LO + HZ_REG_WINDOW)) &&
			 !hz_reg_in_window((void *)(HZ_REG_WINDOW_LO - 1)) && !hz_reg_in_window(NULL) &&
			 !hz_reg_in_window(&pid);
		hz_reg_widen();
		ok = ok && hz_reg_in_window(NULL) && hz_reg_in_window(&pid) &&
		     hz_reg_in_window((void *)~(uintptr_t)0) &&
		     hz_reg_in_window((void *)(HZ_REG_WINDOW_LO + HZ_REG_WINDOW));
		_exit(ok ? 0 : 1);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the window's test, before or after widening");
	cr_assert(!hz_reg_in_window(&st), "the parent's window is its own");
}

Test(registry, first_window)
{
	cr_assert(hz_reg_in_first_window((void *)HZ_REG_WINDOW_LO, HZ_REG_WINDOW));
	cr_assert(!hz_reg_in_first_window((void *)HZ_REG_WINDOW_LO, HZ_REG_WINDOW + 1));
	cr_assert(!hz_reg_in_first_window((void *)(HZ_REG_WINDOW_LO - HZ_PAGE), HZ_PAGE));
	cr_assert(hz_reg_in_first_window((void *)(HZ_REG_WINDOW_LO + HZ_REG_WINDOW - HZ_PAGE), HZ_PAGE));
}
