/* C++'s operator new and delete, every form libstdc++ exports (plain and
 * array; nothrow; aligned; sized), as Debian's libjemalloc.so.2 and
 * tcmalloc export them: without them a C++ program reaches the allocator
 * through libstdc++'s operators, a call more each way, and its sized
 * delete loses the size that spares a lookup.
 *
 * new is malloc's fast path; when it fails, the call goes to the C++
 * runtime's operator of the same name (libstdc++'s, or libc++'s), which
 * calls malloc (this library's) again, then the new_handler, in a loop,
 * and throws std::bad_alloc or, for the nothrow forms, returns NULL: C++'s
 * rules, kept by C++'s own code. With no runtime to defer to
 * (libhugezero.a), a nothrow form returns NULL and the others abort with
 * a message, as a program built without exceptions does.
 *
 * A sized delete below hz_large_threshold frees a block of jemalloc's with its
 * size (a block of that size was made there); other sizes, NULL, a block
 * in the arenas' window (whatever size the program says: a wrong one
 * must not put an arenas' block into jemalloc's cache), and every block
 * in HUGEZERO_MODE=off (hz_large_threshold is 0) take free's slow path. The mangled names are those of LP64 (size_t is unsigned long),
 * x86-64's and arm64's. */
#include <stddef.h>
#include <stdlib.h>

#include "../os/os.h"

#include "preload.h"

HZ_INIT_LINK; /* the constructor comes with this file (init.c) */

/* The C++ runtime's operator name, called with the arguments this one
 * had (size, then the alignment and the nothrow tag where the form has
 * them: arguments past a function's own are ignored under the LP64
 * calling conventions); without a runtime, NULL for a nothrow form, else
 * an abort. */
static HZ_NOINLINE void *new_failed(void **cache, const char *name, size_t size, size_t a2,
				    const void *a3, int nothrow)
{
	void *f = hz_lib_lookup(cache, "libstdc++.so.6", name);
	if (!f)
		f = hz_lib_lookup(cache, "libc++.so.1", name);
	if (f)
		return ((void *(*)(size_t, size_t, const void *))f)(size, a2, a3);
	if (nothrow)
		return NULL; /* errno is ENOMEM, as malloc left it */
	hz_os_log("operator new: out of memory (no C++ runtime to throw std::bad_alloc)", NULL, NULL);
	abort();
}

/* The nothrow forms' second argument (const std::nothrow_t &) is unused,
 * and so is align_val_t in delete: every block of this library is freed
 * by owner whatever its alignment. */
#define NEW(mangled)                                                                       \
	HZ_EXPORT void *mangled(size_t size)                                               \
	{                                                                                  \
		void *p = hz_fast_malloc(size);                                            \
		static void *next;                                                         \
		return hz_likely(p != NULL) ? p : new_failed(&next, #mangled, size, 0, NULL, 0); \
	}
#define NEW_NOTHROW(mangled)                                                                  \
	HZ_EXPORT void *mangled(size_t size, const struct nothrow *nt)                        \
	{                                                                                     \
		void *p = hz_fast_malloc(size);                                               \
		static void *next;                                                            \
		return hz_likely(p != NULL) ? p : new_failed(&next, #mangled, size, (size_t)nt, NULL, 1); \
	}
#define NEW_ALIGNED(mangled, ...)                                                             \
	HZ_EXPORT void *mangled(size_t size, size_t align, ##__VA_ARGS__)                     \
	{                                                                                     \
		void *p = !align || align & (align - 1) ? NULL : hz_alloc_aligned(align, size); \
		static void *next;                                                            \
		return hz_likely(p != NULL) ? p : new_failed(&next, #mangled, size, align, NT, NT != NULL); \
	}
#define DELETE(mangled, ...)                           \
	HZ_EXPORT void mangled(void *p, ##__VA_ARGS__) \
	{                                              \
		hz_fast_free(p);                       \
	}
/* jemalloc's sized free needs the alignment too: it finds the size class
 * from both; a size of 0 is the 1 byte aligned new asked for. */
#define DELETE_SIZED(mangled, flags, ...)                                \
	HZ_EXPORT void mangled(void *p, size_t size, ##__VA_ARGS__)      \
	{                                                                \
		if (hz_likely(size < hz_threshold() && p != NULL &&             \
			      !hz_reg_in_window(p)))                          \
			hz_small.sdallocx(p, size + !size, flags);      \
		else                                                     \
			hz_free_slow(p);                                 \
	}
#define LG(align) HZ_JE_LG_ALIGN(align ? __builtin_ctzl(align) : 0)

struct nothrow; /* std::nothrow_t, passed by reference */
#define UNUSED __attribute__((unused))

NEW(_Znwm)
NEW(_Znam)
NEW_NOTHROW(_ZnwmRKSt9nothrow_t)
NEW_NOTHROW(_ZnamRKSt9nothrow_t)
#define NT NULL
NEW_ALIGNED(_ZnwmSt11align_val_t)
NEW_ALIGNED(_ZnamSt11align_val_t)
#undef NT
#define NT nt
NEW_ALIGNED(_ZnwmSt11align_val_tRKSt9nothrow_t, const struct nothrow *nt)
NEW_ALIGNED(_ZnamSt11align_val_tRKSt9nothrow_t, const struct nothrow *nt)
#undef NT

DELETE(_ZdlPv)
DELETE(_ZdaPv)
DELETE(_ZdlPvRKSt9nothrow_t, UNUSED const struct nothrow *nt)
DELETE(_ZdaPvRKSt9nothrow_t, UNUSED const struct nothrow *nt)
DELETE(_ZdlPvSt11align_val_t, UNUSED size_t align)
DELETE(_ZdaPvSt11align_val_t, UNUSED size_t align)
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, UNUSED size_t align, UNUSED const struct nothrow *nt)
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, UNUSED size_t align, UNUSED const struct nothrow *nt)
DELETE_SIZED(_ZdlPvm, 0)
DELETE_SIZED(_ZdaPvm, 0)
DELETE_SIZED(_ZdlPvmSt11align_val_t, LG(align), UNUSED size_t align)
DELETE_SIZED(_ZdaPvmSt11align_val_t, LG(align), UNUSED size_t align)
