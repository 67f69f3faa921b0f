/* Cache sizes from Linux sysfs, reconciled with what the CPU reports.
 * Virtual machines lie in both directions (a CPUID leaf of zeros, a sysfs
 * without an L3), so each level takes the first plausible figure and falls
 * back to a conservative default. */
#include <string.h>

#include "../os/os.h"
#include "arch.h"

/* Reads a small sysfs file into buf (NUL-terminated); 0 on failure. */
static size_t read_small(const char *path, char *buf, size_t cap)
{
	size_t len;
	return hz_os_read_file(path, buf, cap, &len) ? 0 : len;
}

/* "48K\n" -> 49152; "2M" -> 2097152; 0 when unparsable. */
static size_t parse_cache_size(const char *s)
{
	size_t v = 0;
	int digits = 0;
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		if (v > (SIZE_MAX - 9) / 10)
			return 0;
		v = v * 10 + (size_t)(*s - '0');
	}
	if (!digits)
		return 0;
	unsigned shift = *s == 'K' ? 10 : *s == 'M' ? 20 : *s == 'G' ? 30 : 0;
	return v > (SIZE_MAX >> shift) ? 0 : v << shift;
}

void hz_cache_read_sysfs(const char *dir, struct hz_cache_sizes *out)
{
	char path[256], buf[64];
	*out = (struct hz_cache_sizes){{0}};
	size_t dlen = strlen(dir);
	if (dlen + 32 > sizeof path)
		return;
	memcpy(path, dir, dlen);
	for (int i = 0; i < 10; i++) {
		char *tail = path + dlen;
		memcpy(tail, "/index", 6);
		tail[6] = (char)('0' + i);
		char *leaf = tail + 7;
		int level;
		memcpy(leaf, "/level", 7);
		if (!read_small(path, buf, sizeof buf))
			continue;
		level = buf[0] - '0';
		memcpy(leaf, "/type", 6);
		if (!read_small(path, buf, sizeof buf))
			continue;
		int data = !strncmp(buf, "Data", 4), unified = !strncmp(buf, "Unified", 7);
		memcpy(leaf, "/size", 6);
		if (!read_small(path, buf, sizeof buf))
			continue;
		size_t size = parse_cache_size(buf);
		if (level == 1 && data)
			out->size[HZ_CACHE_L1D] = size;
		else if (level == 2 && (unified || data))
			out->size[HZ_CACHE_L2] = size;
		else if (level == 3 && (unified || data))
			out->size[HZ_CACHE_L3] = size;
	}
}

void hz_cache_reconcile(struct hz_cpu *cpu)
{
	/* Plausible ranges per level, and the default when no source is. */
	static const size_t lo[] = {4 << 10, 64 << 10, 256 << 10};
	static const size_t hi[] = {(size_t)1 << 20, (size_t)64 << 20, (size_t)4 << 30};
	static const size_t def[] = {32 << 10, 512 << 10, 8 << 20};
	for (int l = 0; l < HZ_CACHE_LEVELS; l++) {
		size_t s = cpu->sysfs.size[l], c = cpu->cpuid.size[l];
		if (s >= lo[l] && s <= hi[l])
			cpu->cache.size[l] = s, cpu->source[l] = "sysfs";
		else if (c >= lo[l] && c <= hi[l])
			cpu->cache.size[l] = c, cpu->source[l] = "cpuid";
		else
			cpu->cache.size[l] = def[l], cpu->source[l] = "default";
	}
}
