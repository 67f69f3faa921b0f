/* The lookups of libhugezero.so (dynamic.c). */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "preload.h"

const int hz_sees_jumps = 1; /* invisible.c */

/* What hz_glibc_symbol looks for, and found. */
struct find {
	const char *name;
	void *found;
};

/* A table's address from the dynamic section: glibc stores them
 * relocated where the section is writable, as on x86-64 and arm64. */
static uintptr_t dyn_addr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}

/* name's definition in the module info describes (its GNU hash table):
 * its address when it is a function (STT_FUNC), NULL when there is
 * none; with *other set (if not NULL) when there is one of another kind
 * (an IFUNC's resolver, data), which no caller can take as the function.
 * Symbol versions are not read: the first definition is the one. */
static void *lookup_in(struct dl_phdr_info *info, const char *name, int *other)
{
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	const uint32_t *gnu = NULL;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
		if (dyn->d_tag == DT_SYMTAB)
			sym = (const ElfW(Sym) *)v;
		else if (dyn->d_tag == DT_STRTAB)
			str = (const char *)v;
		else if (dyn->d_tag == DT_GNU_HASH)
			gnu = (const uint32_t *)v;
	}
	if (!sym || !str || !gnu)
		return NULL;
	uint32_t h = 5381, nbuckets = gnu[0], symoffset = gnu[1], bloom = gnu[2];
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom);
	const uint32_t *chain = buckets + nbuckets - symoffset;
	for (uint32_t i = buckets[h % nbuckets]; i; i++) {
		if ((chain[i] | 1) == (h | 1) && !strcmp(str + sym[i].st_name, name) &&
		    sym[i].st_shndx != SHN_UNDEF) {
			if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC)
				return (void *)(info->dlpi_addr + sym[i].st_value);
			if (other)
				*other = 1;
			return NULL;
		}
		if (chain[i] & 1)
			break;
	}
	return NULL;
}

static int find_in(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so.6"))
		return 0;
	f->found = lookup_in(info, f->name, NULL);
	return 1;
}

/* Whether the module info describes holds address a. */
static int holds(struct dl_phdr_info *info, uintptr_t a)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && a >= lo && a - lo < ph->p_memsz)
			return 1;
	}
	return 0;
}

/* What hz_next_family looks for: the first module after this one's
 * (self set) that defines names[0]; its other names there. */
struct find_next {
	const char *const *names;
	void **out;
	int n, self, other;
};

static int find_next_in(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_next *f = arg;
	(void)size;
	if (!f->self) {
		f->self = holds(info, (uintptr_t)&hz_next_family);
		return 0;
	}
	if (!(f->out[0] = lookup_in(info, f->names[0], &f->other)))
		return f->other; /* not here; or here, but not a function: stop */
	for (int i = 1; i < f->n; i++)
		f->out[i] = lookup_in(info, f->names[i], NULL);
	return 1;
}

int hz_next_family(const char *const *names, void **out, int n)
{
	struct find_next f = {names, out, n, 0, 0};
	for (int i = 0; i < n; i++)
		out[i] = NULL;
	dl_iterate_phdr(find_next_in, &f);
	return out[0] ? 0 : -1;
}

void *hz_glibc_symbol(const char *name)
{
	struct find f = {name, NULL};
	dl_iterate_phdr(find_in, &f);
	return f.found;
}

void *hz_lib_lookup(void **cache, const char *soname, const char *name)
{
	void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (f)
		return f;
	/* In the library's own scope: another library (libjemalloc, for a
	 * program built for it) may define the name before it does. */
	void *lib = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
	f = lib ? dlsym(lib, name) : NULL;
	__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	return f;
}

hz_backtrace_fn hz_unwind_open(void)
{
	void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	return lib ? (hz_backtrace_fn)dlsym(lib, "unw_backtrace") : NULL;
}
