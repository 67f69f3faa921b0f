/* The demo's workload, the shape of a frame pipeline: every frame gets a
 * zeroed 64 MiB frame buffer (calloc, freed at the end of the frame, so
 * recycled), a 48 MiB accumulator cleared with memset (both larger than
 * this machine's L3), and a few rows of each drawn; a checksum over what
 * was drawn proves the bytes. Plain libc calls: whatever is preloaded
 * serves them.
 *
 * usage: workload [FRAMES] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define FRAME ((size_t)64 << 20)
#define ACC ((size_t)48 << 20)
#define ROW 4096

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 100;
	if (frames < 1) {
		fprintf(stderr, "usage: workload [FRAMES]\n");
		return 2;
	}
	uint32_t *acc = malloc(ACC);
	if (!acc)
		return 1;
	/* Start-up, as a program's: its buffers' pages touched once, so the
	 * frames measure steady state rather than the first faults. */
	unsigned char *warm = malloc(FRAME);
	if (!warm)
		return 1;
	for (size_t i = 0; i < FRAME; i += 4096)
		warm[i] = 1;
	free(warm);
	for (size_t i = 0; i < ACC / 4; i += 1024)
		acc[i] = 1;
	uint64_t sum = 0;
	double t0 = now_ns();
	for (int f = 0; f < frames; f++) {
		unsigned char *frame = calloc(1, FRAME);
		if (!frame)
			return 1;
		memset(acc, 0, ACC);
		/* Draw rows spread over the frame, accumulate them. */
		for (size_t r = (size_t)f % 7; r < FRAME / ROW; r += 97) {
			unsigned char *row = frame + r * ROW;
			for (size_t i = 0; i < ROW; i += 64) {
				row[i] = (unsigned char)(r + i + (size_t)f);
				acc[(r * 31 + i) % (ACC / 4)] += row[i];
			}
		}
		/* The untouched rest must read zero: sample it. */
		for (size_t i = 4093; i < FRAME; i += 65537)
			if ((i / ROW - (size_t)f % 7) % 97 != 0 && frame[i])
				return fprintf(stderr, "workload: calloc gave a non-zero byte\n"), 1;
		for (size_t i = 0; i < ACC / 4; i += 997)
			sum = sum * 31 + acc[i];
		free(frame);
	}
	free(acc);
	printf("%d frames in %.1f ms, checksum %016llx\n", frames, (now_ns() - t0) / 1e6,
	       (unsigned long long)sum);
	return 0;
}
