/* allocator/fork_locks.h: fork, for the whole allocator, at the top of its
 * room with the zeroer's thread. Called by the library's one set of fork
 * handlers, never registered here. The prepare takes every lock of the
 * allocator in the one order in which the allocator nests them:
 *
 *   the zeroer's thread lock (zeroer.c), every arena's lock in index
 *   order (arena.h), the huge descriptors' pool lock (huge.c), the
 *   registry's writers' lock (registry.c), fresh memory's watch lock
 *   (fresh.c; held with no other)
 *
 * and parent and child release them, so a child forked while other
 * threads allocate finds no lock held by a thread it does not have. The
 * state (blocks, chunks, free memory) is inherited as it is; the claim in
 * flight is dropped (its pages stay dirty), no zeroer thread runs, and
 * the child's counters start from zero, its report being its own. Calls
 * zeroer.h, work.h, claim.h, arena.h, huge.h, fresh.h and registry.h. */
#ifndef HZ_ALLOCATOR_FORK_H
#define HZ_ALLOCATOR_FORK_H

#pragma GCC visibility push(hidden)

void hz_allocator_fork_prepare(void);
void hz_allocator_fork_parent(void);
void hz_allocator_fork_child(void);

#pragma GCC visibility pop

#endif
