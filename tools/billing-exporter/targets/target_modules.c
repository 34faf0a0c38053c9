/*
 * target_modules.c -- a target's modules (target_modules.h): built from
 * the probe reader's probe sets, the files a --binary admits or refuses,
 * and their release.  Below targets.c and program_target.c, which both
 * build targets from them.
 */
#include "target_modules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "program_files.h" /* bx_foreign_file_trusted */
#include "report.h"

static bx_module_t *new_module(bx_target_t *t, const char *path)
{
	bx_module_t *mods = realloc(t->modules, (t->module_count + 1) * sizeof *mods);
	if (!mods)
		return NULL;
	t->modules = mods;
	bx_module_t *m = &mods[t->module_count];
	memset(m, 0, sizeof *m);
	if (!(m->path = strdup(path)))
		return NULL;
	t->module_count++;
	return m;
}

/* t's module for path, added if it has none yet. */
bx_module_t *bx_module_for_path(bx_target_t *t, const char *path)
{
	for (size_t i = 0; i < t->module_count; i++)
		if (strcmp(t->modules[i].path, path) == 0)
			return &t->modules[i];
	return new_module(t, path);
}

int bx_module_has_probe(const bx_module_t *m, const char *probe)
{
	for (size_t i = 0; i < m->probe_count; i++)
		if (strcmp(m->probes[i], probe) == 0)
			return 1;
	return 0;
}

int bx_target_has_probe(const bx_target_t *t, const char *probe)
{
	for (size_t i = 0; i < t->module_count; i++)
		if (bx_module_has_probe(&t->modules[i], probe))
			return 1;
	return 0;
}

bx_module_t *bx_module_add(bx_target_t *t, const char *path, unsigned long long dev, unsigned long long ino,
                           unsigned long long path_dev, unsigned long long path_ino)
{
	bx_module_t *m = new_module(t, path);
	if (m) {
		m->dev = dev;
		m->ino = ino;
		m->path_dev = path_dev;
		m->path_ino = path_ino;
	}
	return m;
}

bx_module_t *bx_module_of_file(const bx_target_t *t, unsigned long long dev, unsigned long long ino)
{
	for (size_t i = 0; i < t->module_count; i++) {
		bx_module_t *m = &t->modules[i];
		if ((m->dev == dev && m->ino == ino) || (m->path_dev == dev && m->path_ino == ino))
			return m;
	}
	return NULL;
}

int bx_module_add_probe(bx_module_t *m, const pr_probe_t *p)
{
	size_t k = 0;
	while (k < m->probe_count && strcmp(m->probes[k], p->name) != 0)
		k++;
	if (k == m->probe_count) {
		char **probes = realloc(m->probes, (m->probe_count + 1) * sizeof *probes);
		if (!probes)
			return -1;
		m->probes = probes;
		if (!(probes[m->probe_count] = strdup(p->name)))
			return -1;
		m->probe_count++;
	}
	if (m->site_count == m->site_cap) {
		size_t cap = m->site_cap ? 2 * m->site_cap : 16;
		bx_site_t *sites = realloc(m->sites, cap * sizeof *sites);
		if (!sites)
			return -1;
		m->sites = sites;
		m->site_cap = cap;
	}
	bx_site_t *site = &m->sites[m->site_count];
	site->probe = k;
	site->offset = p->address_offset;
	site->semaphore = p->semaphore ? p->semaphore_offset : 0;
	if (!(site->args = strdup(p->arg_string ? p->arg_string : "")))
		return -1;
	m->site_count++;
	return 0;
}

int bx_module_read(bx_module_t *m, const char *path, char *err, size_t errlen)
{
	pr_probe_set_t bp;
	memset(&bp, 0, sizeof bp);
	int rc = pr_probe_set_add_file(&bp, path, err, errlen);
	for (size_t i = 0; rc == 0 && i < bp.probe_count; i++) {
		if (strcmp(bp.probes[i].provider, BX_PROVIDER) == 0 && bx_module_add_probe(m, &bp.probes[i]) != 0) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
	}
	pr_probe_set_free(&bp);
	return rc;
}

/* Refused files remembered, each said once: past this many, a refused
 * file is still refused, only not remembered (one line says so). */
#define REFUSED_MAX 1024

int bx_mapped_in(const bx_mapped_t *items, size_t count, unsigned long long dev, unsigned long long ino)
{
	for (size_t i = 0; i < count; i++)
		if (items[i].dev == dev && items[i].ino == ino)
			return 1;
	return 0;
}

int bx_mapped_add(bx_mapped_t **items, size_t *count, unsigned long long dev, unsigned long long ino)
{
	if (bx_mapped_in(*items, *count, dev, ino))
		return 0;
	bx_mapped_t *grown = realloc(*items, (*count + 1) * sizeof *grown);
	if (!grown)
		return -1;
	*items = grown;
	grown[(*count)++] = (bx_mapped_t){ dev, ino };
	return 0;
}

/* t->refused_count goes past REFUSED_MAX, t->refused does not. */
int bx_target_refused(const bx_target_t *t, unsigned long long dev, unsigned long long ino)
{
	return bx_mapped_in(t->refused, t->refused_count < REFUSED_MAX ? t->refused_count : REFUSED_MAX, dev, ino);
}

static void refuse(bx_target_t *t, unsigned long long dev, unsigned long long ino, const char *path, const char *why)
{
	if (t->refused_count < REFUSED_MAX) {
		bx_mapped_add(&t->refused, &t->refused_count, dev, ino); /* out of memory: said again next time */
		bx_error("%s: %s is %s: not counted, not attached", t->label, path, why);
	} else if (t->refused_count++ == REFUSED_MAX) {
		bx_error("%s: %d files at that path refused: further ones are refused without a line", t->label,
		         REFUSED_MAX);
	}
}

int bx_target_admits(bx_target_t *t, pid_t pid, const struct stat *st, unsigned long long dev,
                     unsigned long long ino, size_t have)
{
	char path[64], why[160];
	struct stat here;
	int at_path_here = t->on_host && stat(t->binary, &here) == 0 && (unsigned long long)here.st_dev == dev &&
	                   (unsigned long long)here.st_ino == ino;
	snprintf(path, sizeof path, "the file process %d runs or maps there", (int)pid);
	if (at_path_here)
		return 1; /* the service's own rollout, through our root */
	if (!bx_foreign_file_trusted(pid, st, t->owner_uid, t->only_uid, why, sizeof why)) {
		refuse(t, dev, ino, path, why);
		return 0;
	}
	if (have >= BX_FILES_PER_PATH) {
		if (!t->capped)
			bx_error("%s: %d files at that path counted already (the cap): further files are not counted, "
			         "but for the one at that path here",
			         t->label, BX_FILES_PER_PATH);
		t->capped = 1;
		return 0;
	}
	return 1;
}

void bx_module_free(bx_module_t *m)
{
	for (size_t j = 0; j < m->probe_count; j++)
		free(m->probes[j]);
	free(m->probes);
	for (size_t j = 0; j < m->site_count; j++)
		free(m->sites[j].args);
	free(m->sites);
	free(m->path);
}

void bx_module_remove(bx_target_t *t, unsigned long long dev, unsigned long long ino)
{
	bx_module_t *m = bx_module_of_file(t, dev, ino);
	if (!m)
		return;
	bx_module_free(m);
	size_t i = (size_t)(m - t->modules);
	memmove(m, m + 1, (t->module_count - i - 1) * sizeof *m);
	t->module_count--;
}
