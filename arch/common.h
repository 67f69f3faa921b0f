/* What every room of the library shares: compiler attributes and size
 * arithmetic. No code, no state, no OS or CPU knowledge. */
#ifndef HZ_COMMON_H
#define HZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Visibility, one way: the rooms are built with -fvisibility=hidden, and
 * every internal header wraps its declarations in
 * #pragma GCC visibility push(hidden) / pop; preload.h's HZ_EXPORT marks
 * what the library exports. */
#define HZ_NOINLINE __attribute__((noinline))
/* Thread-local state of the library: initial-exec, so that reaching it
 * never calls into the dynamic linker (which may allocate). */
#define HZ_TLS __thread __attribute__((tls_model("initial-exec")))
#define hz_likely(x) __builtin_expect(!!(x), 1)
#define hz_unlikely(x) __builtin_expect(!!(x), 0)

/* n rounded up to a multiple of to (a power of two); wraps to 0 when n is
 * within to of SIZE_MAX, so callers bound n first. */
static inline size_t hz_round_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

#endif
