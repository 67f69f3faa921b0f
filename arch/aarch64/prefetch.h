/* The write prefetch of aarch64: __builtin_prefetch(p, 1, 3) is PRFM
 * PSTL1KEEP, of the base ISA, so HZ_PREFETCHW_TARGET asks for nothing
 * (hz_cpu_prefetchw() is 1). */
#ifndef HZ_AARCH64_PREFETCH_H
#define HZ_AARCH64_PREFETCH_H

#define HZ_PREFETCHW_TARGET

#endif
