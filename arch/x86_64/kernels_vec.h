/* Template of the vector kernels: a file defines HZ_KV (vector type),
 * HZ_KVW (its width), HZ_KSET1, HZ_KSTOREU, HZ_KSTORE_T (aligned temporal)
 * HZ_KSTORE_NT (aligned streaming) and HZ_KNAME, then includes this file to
 * get HZ_KNAME##_t (temporal) and HZ_KNAME##_nt (streaming, fenced). One
 * unaligned store covers the head, aligned stores the body, one unaligned
 * store the tail; extents shorter than two vectors go to the C kernel. */

#define HZ_KCAT_(a, b) a##b
#define HZ_KCAT(a, b) HZ_KCAT_(a, b)

#define HZ_KBODY(STORE)                                                        \
	unsigned char *p = d, *end = p + n;                                    \
	if (n < 2 * HZ_KVW)                                                    \
		return hz_fill_c(d, c, n);                                     \
	HZ_KV v = HZ_KSET1((char)c);                                           \
	HZ_KSTOREU(p, v);                                                      \
	unsigned char *a = (unsigned char *)(((uintptr_t)p + HZ_KVW) & ~(uintptr_t)(HZ_KVW - 1)); \
	for (; a + 4 * HZ_KVW <= end; a += 4 * HZ_KVW) {                       \
		STORE(a, v);                                                   \
		STORE(a + HZ_KVW, v);                                          \
		STORE(a + 2 * HZ_KVW, v);                                      \
		STORE(a + 3 * HZ_KVW, v);                                      \
	}                                                                      \
	for (; a + HZ_KVW <= end; a += HZ_KVW)                                 \
		STORE(a, v);                                                   \
	HZ_KSTOREU(end - HZ_KVW, v);

static void *HZ_KCAT(HZ_KNAME, _t)(void *d, int c, size_t n)
{
	HZ_KBODY(HZ_KSTORE_T)
	return d;
}

static void *HZ_KCAT(HZ_KNAME, _nt)(void *d, int c, size_t n)
{
	HZ_KBODY(HZ_KSTORE_NT)
	/* Streaming stores are weakly ordered: make them visible in order
	 * with the caller's later stores. */
	__asm__ volatile("sfence" ::: "memory");
	return d;
}

#undef HZ_KBODY
#undef HZ_KV
#undef HZ_KVW
#undef HZ_KSET1
#undef HZ_KSTOREU
#undef HZ_KSTORE_T
#undef HZ_KSTORE_NT
#undef HZ_KNAME
