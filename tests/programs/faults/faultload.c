/* The workload of faults.sh: shadow.h's shadow-checked operations on a
 * few threads, for a number of operations, meant to run under the fault
 * shim (libfaultshim.so) and any allocator. Exit 0 when every calloc was
 * zero, every block kept its bytes, every NULL came with ENOMEM and every
 * forked child exited 0; 1 and a message otherwise.
 *
 *   faultload ITERATIONS [THREADS [SEED]]   operations per thread (default
 *                                           threads 3, seed 1)
 *
 * Output, one line: "faultload ops N nulls N (malloc N calloc N realloc N
 * posix_memalign N) callocs N forks N trims N errors N seconds S". */
#include "shadow.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		sh_say("usage: faultload ITERATIONS [THREADS [SEED]]");
		return 2;
	}
	struct sh_config cfg = {
		.name = "faultload",
		.iters = atol(argv[1]),
		.threads = argc > 2 ? atoi(argv[2]) : 3,
		.seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1,
		.slots = 48,
		.fork_every = 400,
		.trim_every = 300,
	};
	if (cfg.iters < 1)
		cfg.iters = 1;
	struct sh_totals s;
	unsigned long errors = sh_run(&cfg, &s);
	sh_say("faultload ops %lu nulls %lu (malloc %lu calloc %lu realloc %lu posix_memalign %lu) "
	       "callocs %lu forks %lu trims %lu errors %lu seconds %.2f",
	       s.ops, s.nulls, s.null_malloc, s.null_calloc, s.null_realloc, s.null_memalign,
	       s.callocs, s.forks, s.trims, s.errors, s.seconds);
	return errors ? 1 : 0;
}
