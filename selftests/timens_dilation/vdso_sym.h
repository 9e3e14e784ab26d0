/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal vDSO symbol lookup, in the spirit of
 * tools/testing/selftests/vDSO/parse_vdso.c: find the vDSO through
 * getauxval(AT_SYSINFO_EHDR) and walk its dynamic symbol table.  No dlopen(),
 * so it works in static binaries too, and the pointers returned are the
 * vDSO's own entry points (not libc wrappers), i.e. calling them is
 * guaranteed to go through the vDSO code.
 */
#ifndef __TIMENS_DILATION_VDSO_SYM_H__
#define __TIMENS_DILATION_VDSO_SYM_H__

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>

typedef int (*vdso_clock_gettime_t)(clockid_t, struct timespec *);
typedef int (*vdso_clock_getres_t)(clockid_t, struct timespec *);
typedef int (*vdso_gettimeofday_t)(struct timeval *, void *);
typedef time_t (*vdso_time_t)(time_t *);

struct vdso_fns {
	vdso_clock_gettime_t clock_gettime;
	vdso_clock_getres_t clock_getres;
	vdso_gettimeofday_t gettimeofday;
	vdso_time_t time;	/* NULL on architectures without __vdso_time */
};

static inline void *vdso_lookup_one(const char *name)
{
	const ElfW(Ehdr) *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	const ElfW(Phdr) *ph;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const uint32_t *hash = NULL, *gnuhash = NULL;
	uintptr_t load = 0;
	size_t nsym = 0, i;
	int have_load = 0;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return NULL;
	ph = (const void *)((const char *)eh + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !have_load) {
			load = (uintptr_t)eh + ph[i].p_offset - ph[i].p_vaddr;
			have_load = 1;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			dyn = (const void *)((const char *)eh + ph[i].p_offset);
		}
	}
	if (!have_load || !dyn)
		return NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = load + dyn->d_un.d_ptr;

		switch (dyn->d_tag) {
		case DT_SYMTAB:
			symtab = (const void *)p;
			break;
		case DT_STRTAB:
			strtab = (const void *)p;
			break;
		case DT_HASH:
			hash = (const void *)p;
			break;
		case DT_GNU_HASH:
			gnuhash = (const void *)p;
			break;
		}
	}
	if (!symtab || !strtab)
		return NULL;
	if (hash) {
		nsym = hash[1];		/* nchain == number of symbols */
	} else if (gnuhash) {
		uint32_t nbuckets = gnuhash[0], symoffset = gnuhash[1];
		uint32_t bloom = gnuhash[2], max = 0;
		const uint32_t *buckets = gnuhash + 4 +
			bloom * (sizeof(ElfW(Addr)) / sizeof(uint32_t));
		const uint32_t *chains = buckets + nbuckets;

		for (i = 0; i < nbuckets; i++)
			if (buckets[i] > max)
				max = buckets[i];
		if (max < symoffset) {
			nsym = symoffset;
		} else {
			while (!(chains[max - symoffset] & 1))
				max++;
			nsym = max + 1;
		}
	} else {
		return NULL;
	}
	for (i = 0; i < nsym; i++) {
		const ElfW(Sym) *s = &symtab[i];
		unsigned int type = s->st_info & 0xf, bind = s->st_info >> 4;

		if (type != STT_FUNC && type != STT_NOTYPE)
			continue;
		if (bind != STB_GLOBAL && bind != STB_WEAK)
			continue;
		if (s->st_shndx == SHN_UNDEF)
			continue;
		if (!strcmp(strtab + s->st_name, name))
			return (void *)(load + s->st_value);
	}
	return NULL;
}

/* x86 names the entry points __vdso_*, arm64/riscv/... __kernel_* */
static inline void *vdso_lookup(const char *fn)
{
	char name[64];
	void *p;

	snprintf(name, sizeof(name), "__vdso_%s", fn);
	p = vdso_lookup_one(name);
	if (p)
		return p;
	snprintf(name, sizeof(name), "__kernel_%s", fn);
	return vdso_lookup_one(name);
}

static inline void vdso_init(struct vdso_fns *v)
{
	v->clock_gettime = (vdso_clock_gettime_t)vdso_lookup("clock_gettime");
	v->clock_getres = (vdso_clock_getres_t)vdso_lookup("clock_getres");
	v->gettimeofday = (vdso_gettimeofday_t)vdso_lookup("gettimeofday");
	v->time = (vdso_time_t)vdso_lookup("time");
}

#endif
