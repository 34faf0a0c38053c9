/*
 * probe_set.c -- the container of modules and probes the readers fill.
 */
#include "probe_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t pr_probe_set_add_module(pr_probe_set_t *set, const char *path)
{
	pr_module_t *mods = realloc(set->modules, (set->module_count + 1) * sizeof *mods);
	if (!mods)
		return (size_t)-1;
	set->modules = mods;
	size_t n = strlen(path) + 1;
	char *copy = malloc(n);
	if (!copy)
		return (size_t)-1;
	memcpy(copy, path, n);
	memset(&mods[set->module_count], 0, sizeof mods[set->module_count]);
	mods[set->module_count].path = copy;
	return set->module_count++;
}

pr_probe_t *pr_probe_set_add_probe(pr_probe_set_t *set)
{
	if ((set->probe_count & (set->probe_count - 1)) == 0) {
		/* grow at every power of two */
		size_t cap = set->probe_count ? set->probe_count * 2 : 16;
		pr_probe_t *probes = realloc(set->probes, cap * sizeof *probes);
		if (!probes)
			return NULL;
		set->probes = probes;
	}
	pr_probe_t *p = &set->probes[set->probe_count++];
	memset(p, 0, sizeof *p);
	p->traced = -1;
	return p;
}

int pr_probe_set_add_unreadable(pr_probe_set_t *set, const char *path, const char *why)
{
	char **list = realloc(set->unreadable, (set->unreadable_count + 1) * sizeof *list);
	if (!list)
		return -1;
	set->unreadable = list;
	size_t n = strlen(path) + strlen(why) + 3;
	char *line = malloc(n);
	if (!line)
		return -1;
	snprintf(line, n, "%s: %s", path, why);
	/* A path from /proc/PID/maps may hold any byte: one printable line. */
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
			*c = '?';
	list[set->unreadable_count++] = line;
	return 0;
}

static char *dup_or_null(const char *s, int *failed)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	*failed |= d == NULL;
	return d;
}

int pr_probe_set_merge(pr_probe_set_t *dst, const pr_probe_set_t *src)
{
	int failed = 0;
	for (size_t m = 0; m < src->module_count && !failed; m++) {
		const pr_module_t *sm = &src->modules[m];
		int seen = 0;
		for (size_t k = 0; k < dst->module_count && !seen; k++)
			seen = sm->ino && dst->modules[k].dev == sm->dev && dst->modules[k].ino == sm->ino;
		if (seen)
			continue;
		size_t dm = pr_probe_set_add_module(dst, sm->path);
		if (dm == (size_t)-1)
			return -1;
		dst->modules[dm].has_note_section = sm->has_note_section;
		dst->modules[dm].dev = sm->dev;
		dst->modules[dm].ino = sm->ino;
		dst->modules[dm].attach_path = dup_or_null(sm->attach_path, &failed);
		dst->modules[dm].needed_name = dup_or_null(sm->needed_name, &failed);
		dst->modules[dm].needed_by = dup_or_null(sm->needed_by, &failed);
		for (size_t i = 0; i < src->probe_count && !failed; i++) {
			if (src->probes[i].module != m)
				continue;
			pr_probe_t *p = pr_probe_set_add_probe(dst);
			if (!p)
				return -1;
			*p = src->probes[i];
			p->module = dm;
			p->provider = dup_or_null(src->probes[i].provider, &failed);
			p->name = dup_or_null(src->probes[i].name, &failed);
			p->arg_string = dup_or_null(src->probes[i].arg_string, &failed);
		}
	}
	return failed ? -1 : 0;
}

void pr_probe_set_truncate(pr_probe_set_t *set, size_t count)
{
	for (size_t i = count; i < set->probe_count; i++) {
		free(set->probes[i].provider);
		free(set->probes[i].name);
		free(set->probes[i].arg_string);
	}
	if (count < set->probe_count)
		set->probe_count = count;
}

void pr_probe_set_free(pr_probe_set_t *set)
{
	pr_probe_set_truncate(set, 0);
	for (size_t i = 0; i < set->module_count; i++) {
		free(set->modules[i].path);
		free(set->modules[i].attach_path);
		free(set->modules[i].needed_name);
		free(set->modules[i].needed_by);
	}
	for (size_t i = 0; i < set->missing_count; i++) {
		free(set->missing[i].name);
		free(set->missing[i].needed_by);
		free(set->missing[i].why);
	}
	free(set->missing);
	for (size_t i = 0; i < set->unreadable_count; i++)
		free(set->unreadable[i]);
	free(set->unreadable);
	free(set->probes);
	free(set->modules);
	memset(set, 0, sizeof *set);
}
