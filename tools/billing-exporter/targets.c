/*
 * targets.c -- the only file of billing-exporter that calls the probe
 * reader of tools/billing-probes (probe_reader.h), so
 * `billing-probes list` and the exporter agree on what a process carries.
 *
 * --binary PATH matches by path inside each process's own root, then by
 * the file that process maps (device and inode), not by build ID: the
 * path is what the user named, so a new image's binary at /app/billingd
 * (another build ID) is the same service and counts; a copy of the same
 * build elsewhere (same build ID, another path) is not what was named and
 * does not; and the inode is what a uprobe lands on, so one file reached
 * through several containers' roots is attached once, never counted twice.
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

#include "exporter.h"      /* bx_error */
#include "probe_reader.h"  /* tools/billing-probes: the probe reader library */
#include "proc_identity.h" /* bx_proc_each_mapping */
#include "stats_source.h"  /* the --pid targets served from a segment */

#define PROVIDER "billing"

/* A new, empty module for path at the end of t's list, or NULL. */
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
static bx_module_t *module_for(bx_target_t *t, const char *path)
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

/* The probe of note p, and its site, into module m. */
static int add_probe(bx_module_t *m, const bp_probe_t *p)
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

/* The billing probes of the ELF file at path into module m.  0, or -1
 * with a reason in err. */
static int read_file_probes(bx_module_t *m, const char *path, char *err, size_t errlen)
{
	bp_probe_set_t bp;
	memset(&bp, 0, sizeof bp);
	int rc = bp_probe_set_add_file(&bp, path, err, errlen);
	for (size_t i = 0; rc == 0 && i < bp.probe_count; i++) {
		if (strcmp(bp.probes[i].provider, PROVIDER) == 0 && add_probe(m, &bp.probes[i]) != 0) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
	}
	bp_probe_set_free(&bp);
	return rc;
}

static bx_module_t *add_file_module(bx_target_t *t, const char *path, const struct stat *real,
                                    const struct stat *seen)
{
	bx_module_t *m = new_module(t, path);
	if (!m)
		return NULL;
	m->dev = (unsigned long long)real->st_dev;
	m->ino = (unsigned long long)real->st_ino;
	m->path_dev = (unsigned long long)seen->st_dev;
	m->path_ino = (unsigned long long)seen->st_ino;
	return m;
}

/* Has t a module for the file (dev, ino), reached directly or through a
 * path?  (bp_binary_scan's question.) */
static int known_file(unsigned long long dev, unsigned long long ino, void *ctx)
{
	const bx_target_t *t = ctx;
	for (size_t i = 0; i < t->module_count; i++) {
		const bx_module_t *m = &t->modules[i];
		if ((m->dev == dev && m->ino == ino) || (m->path_dev == dev && m->path_ino == ino))
			return 1;
	}
	return 0;
}

/* A file not seen before: a module, with the probes read through the
 * process's root (a file without billing probes stays, with none, so it
 * is not read again every second). */
static int new_file(const bp_binary_file_t *f, void *ctx)
{
	bx_target_t *t = ctx;
	struct stat real, seen;
	memset(&real, 0, sizeof real);
	memset(&seen, 0, sizeof seen);
	real.st_dev = (dev_t)f->dev;
	real.st_ino = (ino_t)f->ino;
	seen.st_dev = (dev_t)f->path_dev;
	seen.st_ino = (ino_t)f->path_ino;
	bx_module_t *m = add_file_module(t, f->root_path, &real, &seen);
	if (!m)
		return -1;
	char err[256];
	if (read_file_probes(m, f->root_path, err, sizeof err) != 0 && strcmp(err, "out of memory") == 0)
		return -1;
	t->discovered++;
	return 0;
}

int bx_target_discover(bx_target_t *t)
{
	if (!t->binary || t->binary[0] != '/')
		return 0;
	t->discovered = 0;
	long processes = bp_binary_scan(t->binary, known_file, new_file, t);
	if (processes < 0)
		return -1;
	t->processes = (size_t)processes;
	return t->discovered;
}

int bx_target_read(bx_target_t *t, int pid, const char *binary, char *err, size_t errlen)
{
	bp_probe_set_t bp;

	memset(t, 0, sizeof *t);
	t->pid = binary ? -1 : pid;
	if (binary) {
		snprintf(t->label, sizeof t->label, "binary:%s", binary);
		if (!(t->binary = strdup(binary))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		/* the file here (attached by the path given: every process of
		 * our mount namespace that maps it) ... */
		struct stat st;
		int rc = 0;
		if (stat(binary, &st) == 0) {
			t->on_host = 1;
			bx_module_t *m = add_file_module(t, binary, &st, &st);
			rc = m ? read_file_probes(m, binary, err, errlen) : -1;
			if (!m)
				snprintf(err, errlen, "out of memory");
		} else if (binary[0] != '/') {
			snprintf(err, errlen, "no such file");
			rc = -1;
		}
		/* ... and the files at PATH in other processes' roots */
		if (rc == 0 && bx_target_discover(t) < 0) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
		size_t with_probes = 0;
		for (size_t i = 0; rc == 0 && i < t->module_count; i++)
			with_probes += t->modules[i].probe_count > 0;
		if (rc == 0 && !t->on_host && t->module_count == 0) {
			snprintf(err, errlen, "no such file (here, or at that path in the root of a running process)");
			rc = -1;
		} else if (rc == 0 && with_probes == 0) {
			snprintf(err, errlen, "carries no billing probes (no stapsdt notes of provider billing)");
			rc = -1;
		}
		if (rc != 0)
			bx_target_free(t);
		return rc;
	}
	snprintf(t->label, sizeof t->label, "pid:%d", pid);
	t->start_time = bp_process_start_time((pid_t)pid);
	memset(&bp, 0, sizeof bp);
	if (bp_probe_set_load_pid((pid_t)pid, &bp, err, errlen) != 0) {
		bp_probe_set_free(&bp);
		bx_target_free(t);
		return -1;
	}
	/* A mapped file the reader could not read may hold probes: said, not
	 * dropped silently (the probes of the others are attached). */
	for (size_t i = 0; i < bp.unreadable_count; i++)
		bx_error("%s: %s", t->label, bp.unreadable[i]);
	int rc = 0;
	for (size_t i = 0; i < bp.probe_count && rc == 0; i++) {
		const bp_probe_t *p = &bp.probes[i];
		if (strcmp(p->provider, PROVIDER) != 0)
			continue;
		/* Attach through a path that reaches the very file the process
		 * maps from here: its own path, or /proc/PID/root/PATH for a
		 * process in another mount namespace (a container). */
		const bp_module_t *mod = &bp.modules[p->module];
		if (!mod->attach_path) {
			snprintf(err, errlen, "%.300s: no path from here reaches the file the process maps", mod->path);
			rc = -1;
			break;
		}
		bx_module_t *m = module_for(t, mod->attach_path);
		if (m && !m->dev && !m->ino) { /* the file mapped: what a --binary's uprobe would land on too */
			m->dev = m->path_dev = mod->dev;
			m->ino = m->path_ino = mod->ino;
		}
		if (!m || add_probe(m, p) != 0) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
	}
	bp_probe_set_free(&bp);
	if (rc == 0 && t->module_count == 0) {
		snprintf(err, errlen, "maps no module with billing probes");
		rc = -1;
	}
	if (rc != 0)
		bx_target_free(t); /* a failed read leaves nothing to free */
	return rc;
}

int bx_target_alive(const bx_target_t *t)
{
	if (t->skipped)
		return 0;
	if (t->pid < 0) {
		struct stat st;
		return (t->on_host && stat(t->binary, &st) == 0) || t->processes > 0;
	}
	return t->start_time && bp_process_start_time((pid_t)t->pid) == t->start_time;
}

void bx_target_free(bx_target_t *t)
{
	for (size_t i = 0; i < t->module_count; i++) {
		for (size_t j = 0; j < t->modules[i].probe_count; j++)
			free(t->modules[i].probes[j]);
		free(t->modules[i].probes);
		for (size_t j = 0; j < t->modules[i].site_count; j++)
			free(t->modules[i].sites[j].args);
		free(t->modules[i].sites);
		free(t->modules[i].path);
	}
	free(t->modules);
	free(t->binary);
	memset(t, 0, sizeof *t);
}

/* Does target b (a --binary) have a module for the file (dev, ino)? */
static int binary_has_file(const bx_target_t *b, unsigned long long dev, unsigned long long ino)
{
	for (size_t i = 0; i < b->module_count; i++) {
		const bx_module_t *m = &b->modules[i];
		if (m->probe_count && ((m->dev == dev && m->ino == ino) || (m->path_dev == dev && m->path_ino == ino)))
			return 1;
	}
	return 0;
}

size_t bx_binary_target_count(const bx_exporter_t *ex)
{
	size_t n = 0;
	for (size_t i = 0; i < ex->target_count; i++)
		n += ex->targets[i].binary != NULL;
	return n;
}

typedef struct maps_binary {
	const bx_exporter_t *ex;
	int found; /* the index of a --binary the process maps a file of */
} maps_binary_t;

static int mapping_of_binary(unsigned long long dev, unsigned long long ino, const char *path, void *ctx)
{
	maps_binary_t *m = ctx;
	(void)path;
	for (size_t i = 0; i < m->ex->target_count; i++) {
		if (m->ex->targets[i].binary && binary_has_file(&m->ex->targets[i], dev, ino)) {
			m->found = (int)i;
			return 1;
		}
	}
	return 0;
}

int bx_binary_target_of(const bx_exporter_t *ex, pid_t pid)
{
	maps_binary_t m = { ex, -1 };
	if (bx_proc_each_mapping(pid, mapping_of_binary, &m) < 0)
		return -2;
	return m.found;
}

int bx_targets_check_overlap(const bx_exporter_t *ex, char *err, size_t errlen)
{
	for (size_t i = 0; i < ex->target_count; i++) {
		const bx_target_t *a = &ex->targets[i];
		for (size_t j = 0; j < ex->target_count; j++) {
			const bx_target_t *b = &ex->targets[j];
			if (i == j || !b->binary || (a->binary && j < i))
				continue;
			for (size_t k = 0; k < a->module_count; k++) {
				const bx_module_t *m = &a->modules[k];
				if (!m->probe_count || !binary_has_file(b, m->dev, m->ino))
					continue;
				if (a->binary)
					snprintf(err, errlen, "--binary %s and --binary %s name one file: it would count twice",
					         a->binary, b->binary);
				else
					snprintf(err, errlen, "--pid %d maps %s, which --binary %s attaches to: it would count "
					                      "twice (name it once)",
					         a->pid, m->path, b->binary);
				return -1;
			}
		}
	}
	for (size_t i = 0; i < bx_stats_target_count(ex); i++) {
		int pid = bx_stats_target_pid(ex, i), b = pid > 0 && bx_binary_target_count(ex) ? bx_binary_target_of(ex, pid) : -1;
		if (b == -1)
			continue;
		if (b >= 0)
			snprintf(err, errlen, "--pid %d maps a file --binary %s attaches to: its fires would count twice, from "
			                      "its stats segment and through USDT (name it once)",
			         pid, ex->targets[b].binary);
		else
			snprintf(err, errlen, "--pid %d: its memory maps cannot be read, so whether --binary counts it too "
			                      "is unknown (run as root or as its user)",
			         pid);
		return -1;
	}
	return 0;
}
