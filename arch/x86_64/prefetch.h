/* The write prefetch of x86-64: __builtin_prefetch(p, 1, 3) in a function
 * built with HZ_PREFETCHW_TARGET is PREFETCHW, which asks for p's line
 * in the exclusive state, as a store would. It is not in the base ISA
 * (the PRFCHW feature: some older CPUs fault on it), so such a function
 * runs only where hz_cpu_prefetchw() says; outside one, the compiler
 * emits a read prefetch. */
#ifndef HZ_X86_PREFETCH_H
#define HZ_X86_PREFETCH_H

#define HZ_PREFETCHW_TARGET __attribute__((target("prfchw")))

#endif
