/* The soak: tests/programs/faults/shadow.h's shadow-checked workload (every
 * calloc checked zero, every block checked unchanged before it is freed or
 * resized, realloc's prefix kept, memset of blocks and ranges, forks with
 * checked children, malloc_trim, sizes 1 B - 64 MiB) on THREADS threads for
 * SECONDS, with no fault injected: the library as it is, for a long run by
 * hand (not run by CI):
 *
 *   LD_PRELOAD=build/libhugezero.so HUGEZERO_STATS=/tmp/soak.json \
 *     HUGEZERO_STATS_FORMAT=json build/bench/soak 1800 4
 *
 *   soak SECONDS [THREADS [SEED]]   (default 4 threads, seed: the clock)
 *
 * A progress line on stderr every 60 s; at the end one line on stdout:
 * "soak seconds S threads T seed X ops N bytes N callocs N calloc_bytes N
 * checked_bytes N forks N trims N nulls N errors N". Exit status 1 after
 * the first error (its message on stderr: every thread stops there). */
#include "../tests/programs/faults/shadow.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		sh_say("usage: soak SECONDS [THREADS [SEED]]");
		return 2;
	}
	struct sh_config cfg = {
		.name = "soak",
		.seconds = atof(argv[1]),
		.threads = argc > 2 ? atoi(argv[2]) : 4,
		.seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL),
		.slots = 48,
		.fork_every = 2000,
		.trim_every = 1000,
		.progress_s = 60,
	};
	if (cfg.seconds <= 0)
		cfg.seconds = 1;
	struct sh_totals s;
	unsigned long errors = sh_run(&cfg, &s);
	printf("soak seconds %.1f threads %d seed %llu ops %lu bytes %lu callocs %lu "
	       "calloc_bytes %lu checked_bytes %lu forks %lu trims %lu nulls %lu errors %lu\n",
	       s.seconds, cfg.threads, (unsigned long long)cfg.seed, s.ops, s.bytes, s.callocs,
	       s.calloc_bytes, s.checked_bytes, s.forks, s.trims, s.nulls, s.errors);
	return errors ? 1 : 0;
}
