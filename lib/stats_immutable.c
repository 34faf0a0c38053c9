/*
 * stats_immutable.c -- which label pointers the stats writer may cache by
 * address (stats_writer.h, the first level): those into a read-only
 * segment of a loaded object that stays loaded.  A string literal is
 * there; its bytes cannot change, so a pointer equal to a cached one is the
 * same label.  A buffer the caller fills and reuses (stack, heap, a
 * writable segment) is not, and is compared by its bytes on every fire.
 *
 * The table is taken once, when the stats start: every object loaded then
 * (the program, its libraries, the ones dlopen()ed before) is made
 * RTLD_NODELETE, so no range in the table can be unmapped and reused for
 * other bytes.  An object loaded later is not in it: its literals take the
 * key-bytes path (correct, slower).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NOLOAD, RTLD_NODELETE */
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stats_writer.h"

#define RANGES_MAX 512 /* read-only segments; past it, the rest are not cached by address */
#define OBJECTS_MAX 256

struct range {
	uintptr_t lo, hi; /* [lo, hi) */
};

static struct range ranges[RANGES_MAX];
static unsigned range_count; /* published with release once ranges[] is sorted */

/* The objects' names, first pass (pinned before their ranges are taken). */
struct names {
	char *name[OBJECTS_MAX];
	size_t n;
};

static int is_program(const struct dl_phdr_info *info, size_t index)
{
	return index == 0 && (!info->dlpi_name || !info->dlpi_name[0]); /* the executable: never unloaded */
}

struct walk {
	struct names *names;
	size_t index;
	size_t nranges;
};

static int collect_name(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	(void)size;
	if (!is_program(info, w->index++) && info->dlpi_name && info->dlpi_name[0] && w->names->n < OBJECTS_MAX) {
		char *copy = strdup(info->dlpi_name);
		if (copy)
			w->names->name[w->names->n++] = copy;
	}
	return 0;
}

/* Pinned: RTLD_NOLOAD finds the loaded object, RTLD_NODELETE keeps it
 * mapped for the rest of the process.  A name that no longer loads (an
 * object gone meanwhile, the vDSO) is dropped. */
static void pin(struct names *names)
{
	size_t kept = 0;
	for (size_t i = 0; i < names->n; i++) {
		if (dlopen(names->name[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE))
			names->name[kept++] = names->name[i];
		else
			free(names->name[i]);
	}
	names->n = kept;
}

static int pinned(const struct names *names, const char *name)
{
	for (size_t i = 0; name && i < names->n; i++)
		if (strcmp(names->name[i], name) == 0)
			return 1;
	return 0;
}

static int collect_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	(void)size;
	if (!is_program(info, w->index++) && !pinned(w->names, info->dlpi_name))
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum && w->nranges < RANGES_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || ph->p_memsz == 0)
			continue;
		ranges[w->nranges].lo = (uintptr_t)(info->dlpi_addr + ph->p_vaddr);
		ranges[w->nranges].hi = ranges[w->nranges].lo + (uintptr_t)ph->p_memsz;
		w->nranges++;
	}
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void bs_immutable_start_(void)
{
	struct names names;
	struct walk w;

	memset(&names, 0, sizeof names);
	memset(&w, 0, sizeof w);
	w.names = &names;
	dl_iterate_phdr(collect_name, &w);
	pin(&names);
	w.index = 0;
	dl_iterate_phdr(collect_ranges, &w);
	for (size_t i = 0; i < names.n; i++)
		free(names.name[i]);
	qsort(ranges, w.nranges, sizeof ranges[0], by_start);
	__atomic_store_n(&range_count, (unsigned)w.nranges, __ATOMIC_RELEASE);
}

int bs_immutable_(const char *p)
{
	uintptr_t a = (uintptr_t)p;
	unsigned lo = 0, hi = __atomic_load_n(&range_count, __ATOMIC_ACQUIRE);

	if (!p)
		return 1;
	while (lo < hi) { /* the last range starting at or below a */
		unsigned mid = lo + (hi - lo) / 2;
		if (ranges[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && a < ranges[lo - 1].hi;
}
