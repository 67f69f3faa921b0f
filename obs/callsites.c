/* Call sites of large clears (callsites.c). */
#define _GNU_SOURCE /* dladdr, dl_iterate_phdr */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "../os/os.h"
#include "../arch/arch.h"
#include "obs.h"

#define SITES 1024 /* a power of two */

struct site {
	uint64_t hash, calls, bytes;
	int depth;
	void *ip[HZ_SITE_FRAMES];
};

/* The table and the report's copy of it, 320 KiB: mapped when sampling
 * is set up (a process that does not sample keeps that address space). */
static struct tables {
	struct site sites[SITES], copy[SITES];
} *t;
static uint64_t dropped; /* samples with no room left */
static int busy;         /* the table's lock: taken with exchange, never waited for by a sampler */
static unsigned period;
static hz_backtrace_fn take_backtrace;
int hz_callsites_on;

static HZ_TLS long countdown;
static HZ_TLS int sampling;

/* fork: the child's table starts empty (its report is its own) and
 * unlocked (the thread that held it is not there). */
void hz_callsites_fork_child(void)
{
	if (t)
		hz_memzero(t->sites, sizeof t->sites);
	dropped = 0;
	busy = 0;
}

int hz_callsites_setup(unsigned p, hz_backtrace_fn bt)
{
	void *m;
	if (hz_os_map(hz_round_up(sizeof *t, hz_page_size), hz_page_size, &m))
		return -1;
	t = m;
	period = p;
	take_backtrace = bt;
	__atomic_store_n(&hz_callsites_on, 1, __ATOMIC_RELEASE);
	return 0;
}

static uint64_t hash_stack(void *const *ip, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < n; i++)
		h = (h ^ (uintptr_t)ip[i]) * 0x100000001b3ull;
	return h | 1; /* 0 marks a free slot */
}

static void insert(void *const *ip, int n, size_t bytes)
{
	uint64_t h = hash_stack(ip, n);
	for (unsigned i = 0, k = (unsigned)h & (SITES - 1); i < SITES; i++, k = (k + 1) & (SITES - 1)) {
		struct site *s = &t->sites[k];
		if (!s->hash) {
			s->hash = h;
			s->depth = n;
			memcpy(s->ip, ip, (size_t)n * sizeof *ip);
		} else if (s->hash != h || s->depth != n || memcmp(s->ip, ip, (size_t)n * sizeof *ip)) {
			continue;
		}
		s->calls++;
		s->bytes += bytes;
		return;
	}
	dropped++;
}

void hz_callsite(size_t bytes)
{
	if (--countdown > 0)
		return;
	countdown = period;
	if (sampling)
		return; /* the backtrace function called back into the library */
	sampling = 1;
	void *ip[HZ_SITE_FRAMES];
	int n = take_backtrace(ip, HZ_SITE_FRAMES);
	if (n > 0 && !__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) {
		insert(ip, n, bytes);
		__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
	}
	sampling = 0;
}

/* ---- the report's side: symbols and build ids ---- */

struct find_module {
	uintptr_t ip;
	char *build_id; /* 41 bytes */
};

/* The GNU build id of the module holding f->ip, as hex. */
static int module_note(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find_module *f = arg;
	int hit = 0;
	for (int i = 0; i < info->dlpi_phnum && !hit; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		hit = ph->p_type == PT_LOAD && f->ip >= lo && f->ip < lo + ph->p_memsz;
	}
	if (!hit)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const unsigned char *name = p + sizeof *nh;
			const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
				unsigned n = nh->n_descsz < 20 ? nh->n_descsz : 20;
				for (unsigned k = 0; k < n; k++) {
					f->build_id[2 * k] = "0123456789abcdef"[desc[k] >> 4];
					f->build_id[2 * k + 1] = "0123456789abcdef"[desc[k] & 15];
				}
				f->build_id[2 * n] = 0;
				return 1;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1;
}

static int is_ours(const void *base)
{
	Dl_info me;
	return dladdr((void *)hz_callsite, &me) && me.dli_fbase == base;
}

void hz_callsites_begin(struct hz_site_cursor *c, unsigned max)
{
	c->rank = 0;
	c->max = hz_callsites_on ? max : 0;
	c->period = period;
	if (!c->max)
		return;
	while (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		; /* samplers hold it for a few hundred instructions */
	memcpy(t->copy, t->sites, sizeof t->copy);
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

int hz_callsites_next(struct hz_site_cursor *c)
{
	if (c->rank >= c->max)
		return 0;
	struct site *best = NULL;
	for (unsigned k = 0; k < SITES; k++)
		if (t->copy[k].hash && t->copy[k].calls && (!best || t->copy[k].bytes > best->bytes))
			best = &t->copy[k];
	if (!best)
		return 0;
	int n = 0;
	for (int i = 0; i < best->depth; i++) {
		uintptr_t ip = (uintptr_t)best->ip[i] - 1; /* into the call instruction */
		Dl_info di;
		if (!dladdr((void *)ip, &di)) {
			c->frames[n++] = (struct hz_site_frame){NULL, ip, "?", ip, ""};
			continue;
		}
		if (is_ours(di.dli_fbase))
			continue;
		struct hz_site_frame *f = &c->frames[n++];
		f->function = di.dli_sname;
		f->offset = ip - (di.dli_saddr ? (uintptr_t)di.dli_saddr : (uintptr_t)di.dli_fbase);
		f->module = di.dli_fname;
		f->module_offset = ip - (uintptr_t)di.dli_fbase;
		f->build_id[0] = 0;
		struct find_module fm = {ip, f->build_id};
		dl_iterate_phdr(module_note, &fm);
	}
	c->rank++;
	c->nframes = n;
	c->calls = best->calls * c->period;
	c->bytes = best->bytes * c->period;
	best->calls = 0;
	return 1;
}
