/* allocator/purge.h: a chunk's free memory back to the kernel. Gathers
 * its whole free 2 MiB blocks (dirty or clean) into ranges, adjacent ones
 * merged, released in one batch (hz_os_release_batch) and marked neither
 * dirty nor clean; never a huge page in use, nor the zeroer's claimed
 * pages. Lock held, as chunk.h. */
#ifndef HZ_PURGE_H
#define HZ_PURGE_H

#include "chunk.h"

#pragma GCC visibility push(hidden)

/* What a purge did: its batches, and the clean pages among what it
 * released (the zeroer's work no block took), populated ones among them. */
struct hz_purge_result {
	struct hz_release_result batch;
	size_t clean_bytes, populated_bytes;
};

/* With partial set it also releases the free pages in memory outside
 * whole blocks (malloc_trim; not on hugetlb chunks). Whole huge pages go
 * until `most` bytes have (SIZE_MAX: all; the last may pass it, a huge
 * page is never split), the chunk's highest first (the last that first
 * fit would hand out again). Returns the bytes
 * released; *res, if not NULL, receives what it did. */
size_t hz_purge_chunk(struct hz_chunk *c, int partial, size_t most, struct hz_purge_result *res);

#pragma GCC visibility pop

#endif
