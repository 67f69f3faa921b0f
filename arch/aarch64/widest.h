/* The widest small-size front end of aarch64, for the memset_small.h
 * template: 16-byte NEON vectors, which every aarch64 CPU has. The
 * includer names the function (HZ_FRONT), includes the template, then
 * "#pragma GCC pop_options". */
#pragma GCC push_options
#define HZ_VW 16
