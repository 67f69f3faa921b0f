/* The allocator's fixed cost in address space: VmSize and VmData (KiB)
 * once it has served a first small block, what a limit's count is
 * measured against (hostile.sh, case 4). C and C++. */
#ifndef HOSTILE_FOOTPRINT_H
#define HOSTILE_FOOTPRINT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, key, n))
			v = atol(line + n);
	if (f)
		fclose(f);
	return v;
}

/* Prints "VMSIZE VMDATA " after one small block was served. */
static void print_footprint(void)
{
	void *volatile p = malloc(16);
	free(p);
	long size = status_kb("VmSize:"), data = status_kb("VmData:");
	printf("%ld %ld ", size, data);
}

#endif
