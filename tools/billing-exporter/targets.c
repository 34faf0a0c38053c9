/*
 * targets.c -- the only file of billing-exporter that calls the probe
 * reader of tools/billing-probes (probe_reader.h, TEAM.md contract 2), so
 * `billing-probes list` and the exporter agree on what a process carries.
 */
#include "targets.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "probe_reader.h" /* tools/billing-probes: the probe reader library */

#define PROVIDER "billing"

static bx_module_t *module_for(bx_target_t *t, const char *path)
{
	for (size_t i = 0; i < t->module_count; i++)
		if (strcmp(t->modules[i].path, path) == 0)
			return &t->modules[i];
	bx_module_t *mods = realloc(t->modules, (t->module_count + 1) * sizeof *mods);
	if (!mods)
		return NULL;
	t->modules = mods;
	bx_module_t *m = &mods[t->module_count];
	memset(m, 0, sizeof *m);
	m->path = strdup(path);
	if (!m->path)
		return NULL;
	t->module_count++;
	return m;
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

static int add_probe(bx_module_t *m, const char *name)
{
	if (bx_module_has_probe(m, name))
		return 0;
	char **p = realloc(m->probes, (m->probe_count + 1) * sizeof *p);
	if (!p)
		return -1;
	m->probes = p;
	if (!(p[m->probe_count] = strdup(name)))
		return -1;
	m->probe_count++;
	return 0;
}

int bx_target_read(bx_target_t *t, int pid, const char *binary, char *err, size_t errlen)
{
	bp_probe_set_t bp;
	int loaded;

	memset(t, 0, sizeof *t);
	t->pid = binary ? -1 : pid;
	if (binary) {
		snprintf(t->label, sizeof t->label, "binary:%s", binary);
		if (!(t->binary = strdup(binary))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	} else {
		snprintf(t->label, sizeof t->label, "pid:%d", pid);
		t->start_time = bp_process_start_time((pid_t)pid);
	}
	memset(&bp, 0, sizeof bp);
	/* A file named --binary is a file even when its name is all digits. */
	loaded = binary ? bp_probe_set_add_file(&bp, binary, err, errlen)
	                : bp_probe_set_load_pid((pid_t)pid, &bp, err, errlen);
	if (loaded != 0) {
		bp_probe_set_free(&bp);
		bx_target_free(t);
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < bp.probe_count && rc == 0; i++) {
		const bp_probe_t *p = &bp.probes[i];
		if (strcmp(p->provider, PROVIDER) != 0)
			continue;
		/* Attach through the path the user gave for a binary: libbpf then
		 * matches every process that maps that file. */
		bx_module_t *m = module_for(t, binary ? binary : bp.modules[p->module].path);
		if (!m || add_probe(m, p->name) != 0) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
	}
	bp_probe_set_free(&bp);
	if (rc == 0 && t->module_count == 0) {
		snprintf(err, errlen, binary ? "carries no billing probes (no stapsdt notes of provider billing)" : "maps no module with billing probes");
		rc = -1;
	}
	if (rc != 0)
		bx_target_free(t); /* a failed read leaves nothing to free */
	return rc;
}

int bx_target_alive(const bx_target_t *t)
{
	if (t->pid < 0) {
		struct stat st;
		return stat(t->binary, &st) == 0;
	}
	return t->start_time && bp_process_start_time((pid_t)t->pid) == t->start_time;
}

void bx_target_free(bx_target_t *t)
{
	for (size_t i = 0; i < t->module_count; i++) {
		for (size_t j = 0; j < t->modules[i].probe_count; j++)
			free(t->modules[i].probes[j]);
		free(t->modules[i].probes);
		free(t->modules[i].path);
	}
	free(t->modules);
	free(t->binary);
	memset(t, 0, sizeof *t);
}
