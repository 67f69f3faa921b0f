/* invisible-env: HUGEZERO_HARDENED=1 */
/* Blocks made before mlockall(MCL_CURRENT | MCL_FUTURE) and after it,
 * freed and their memory reused by blocks of other sizes, each written
 * whole: no byte of a live block faults (issue 37, case 6). In hardened
 * mode every large block is followed by a guard; on a VM_LOCKED mapping
 * the kernel refuses MADV_GUARD_INSTALL (EINVAL), and one refusal once
 * switched every later guard removal to mprotect, which left the guards
 * installed before mlockall in place: a 4 MiB block over a freed 1 MiB
 * one faulted at the old guard page. Blocks made after mlockall have
 * their guards by mprotect; those must go at their free too.
 *
 * A fault is reported (its address) and the program exits 1. Exits 77
 * when mlockall is refused (no CAP_IPC_LOCK and RLIMIT_MEMLOCK too low):
 * nothing was tested. What is locked stays near 150 MiB under the
 * library (its 64 MiB chunks are locked whole), 40 MiB under glibc. */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static const char *step = "start";

static void put(const char *s)
{
	ssize_t r = write(2, s, strlen(s));
	(void)r;
}

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	char hex[19] = "0x";
	uintptr_t a = (uintptr_t)si->si_addr;
	for (int i = 0; i < 16; i++)
		hex[2 + i] = "0123456789abcdef"[a >> (60 - 4 * i) & 15];
	hex[18] = 0;
	put("hardened_mlockall: SIGSEGV at ");
	put(hex);
	put(" in a live block (");
	put(step);
	put(")\n");
	_exit(1);
}

/* A block of size bytes, written whole (to its usable size) and read
 * back. */
static unsigned char *take(size_t size, int byte)
{
	unsigned char *p = malloc(size);
	if (!p) {
		fprintf(stderr, "hardened_mlockall: malloc(%zu) failed (%s)\n", size, step);
		exit(1);
	}
	size_t n = malloc_usable_size(p);
	memset(p, byte, n);
	for (size_t i = 0; i < n; i += 4096)
		if (p[i] != (unsigned char)byte || p[n - 1] != (unsigned char)byte) {
			fprintf(stderr, "hardened_mlockall: byte %zu of a %zu-byte block lost (%s)\n", i, size, step);
			exit(1);
		}
	return p;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);

	/* Guards installed the ordinary way, before the lock: a 1 MiB block
	 * first (under hugezero at its chunk's start, its guard page at
	 * 1 MiB), its neighbour, and others placed past 6 MiB (the pad,
	 * freed before the lock, keeps them there), so that the 4 MiB block
	 * below can take the 1 MiB block's place. */
	step = "blocks before mlockall";
	unsigned char *one = take(MiB, 0x11);
	unsigned char *next = take(MiB + 4096 * 3, 0x22);
	unsigned char *pad = take(4 * MiB, 0x2f);
	unsigned char *three = take(3 * MiB, 0x33);
	unsigned char *six = take(6 * MiB + 100, 0x44);
	unsigned char *keep = take(2 * MiB, 0x45);
	free(pad);

	struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
	setrlimit(RLIMIT_MEMLOCK, &unlimited); /* where allowed; mlockall says */
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		perror("hardened_mlockall: mlockall (not tested)");
		return 77;
	}

	/* The case as found: a block made under the lock (whose guard the
	 * kernel refuses to install by advice), then the 1 MiB block and
	 * its neighbour freed and a 4 MiB block over them. */
	step = "a block under the lock";
	free(take(MiB, 0x50));
	step = "4 MiB over a freed 1 MiB block";
	free(one);
	free(next);
	unsigned char *four = take(4 * MiB, 0x55);

	/* The others freed, their memory reused at other sizes and offsets. */
	step = "blocks over the freed 3 and 6 MiB blocks";
	free(three);
	free(six);
	unsigned char *a = take(2 * MiB + 1, 0x66);
	unsigned char *b = take(MiB + 12345, 0x77);
	unsigned char *c = take(5 * MiB, 0x88);

	/* Guards made under the lock (mprotect where the kernel refuses the
	 * advice) removed at their free, their memory reused. */
	step = "blocks over blocks made after mlockall";
	free(four);
	free(a);
	free(b);
	unsigned char *d = take(7 * MiB, 0x99);
	unsigned char *e = take(MiB, 0xaa);
	unsigned char *f = take(3 * MiB + 1, 0xbb);
	free(c);
	free(e);
	unsigned char *g = take(6 * MiB, 0xcc);

	step = "a calloc and a realloc";
	free(d);
	unsigned char *z = calloc(1, 8 * MiB);
	if (!z) {
		fprintf(stderr, "hardened_mlockall: calloc failed\n");
		return 1;
	}
	for (size_t i = 0, n = malloc_usable_size(z); i < n; i++)
		if (z[i]) {
			fprintf(stderr, "hardened_mlockall: calloc'ed byte %zu is 0x%02x\n", i, z[i]);
			return 1;
		}
	memset(z, 0xdd, malloc_usable_size(z));
	unsigned char *r = realloc(f, 9 * MiB);
	if (!r) {
		fprintf(stderr, "hardened_mlockall: realloc failed\n");
		return 1;
	}
	for (size_t i = 0; i < 3 * MiB + 1; i += 4096)
		if (r[i] != 0xbb) {
			fprintf(stderr, "hardened_mlockall: realloc lost byte %zu\n", i);
			return 1;
		}
	memset(r, 0xee, malloc_usable_size(r));

	step = "the last frees";
	for (size_t i = 0; i < malloc_usable_size(keep); i += 4096)
		if (keep[i] != 0x45) {
			fprintf(stderr, "hardened_mlockall: a block kept throughout lost byte %zu\n", i);
			return 1;
		}
	free(keep);
	free(g);
	free(z);
	free(r);
	munlockall();
	printf("hardened_mlockall: every block written whole before and after mlockall\n");
	return 0;
}
