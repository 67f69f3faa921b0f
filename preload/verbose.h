/* preload/verbose.h: HUGEZERO_VERBOSE's report of the configuration. */
#ifndef HZ_VERBOSE_H
#define HZ_VERBOSE_H

#pragma GCC visibility push(hidden)

/* The CPU, caches, fresh memory, the zeroer, the limits, the front end
 * and the policy, on stderr; snprintf into a stack buffer: no allocation
 * for these formats. */
void hz_verbose_print(void);

#pragma GCC visibility pop

#endif
