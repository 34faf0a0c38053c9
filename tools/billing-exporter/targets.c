/*
 * targets.c -- the only file of billing-exporter that calls the probe
 * reader of tools/billing-probes (probe_reader.h, TEAM.md contract 2), so
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

#include <dirent.h>
#include <errno.h>
#include <limits.h>
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

/* The billing probes of the ELF file at path into module m.  0, or -1
 * with a reason in err. */
static int read_file_probes(bx_module_t *m, const char *path, char *err, size_t errlen)
{
	bp_probe_set_t bp;
	memset(&bp, 0, sizeof bp);
	int rc = bp_probe_set_add_file(&bp, path, err, errlen);
	for (size_t i = 0; rc == 0 && i < bp.probe_count; i++) {
		if (strcmp(bp.probes[i].provider, PROVIDER) == 0 && add_probe(m, bp.probes[i].name) != 0) {
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
	bx_module_t *mods = realloc(t->modules, (t->module_count + 1) * sizeof *mods);
	if (!mods)
		return NULL;
	t->modules = mods;
	bx_module_t *m = &mods[t->module_count];
	memset(m, 0, sizeof *m);
	if (!(m->path = strdup(path)))
		return NULL;
	m->dev = (unsigned long long)real->st_dev;
	m->ino = (unsigned long long)real->st_ino;
	m->path_dev = (unsigned long long)seen->st_dev;
	m->path_ino = (unsigned long long)seen->st_ino;
	t->module_count++;
	return m;
}

/* The module of the file (dev, ino), reached directly or through a path. */
static bx_module_t *known_file(bx_target_t *t, const struct stat *st)
{
	unsigned long long dev = (unsigned long long)st->st_dev, ino = (unsigned long long)st->st_ino;
	for (size_t i = 0; i < t->module_count; i++) {
		bx_module_t *m = &t->modules[i];
		if ((m->dev == dev && m->ino == ino) || (m->path_dev == dev && m->path_ino == ino))
			return m;
	}
	return NULL;
}

/* Does pid map the file it sees at t->binary (seen: its stat through
 * /proc/PID/root)?  A mapping matches by its path as the process names it
 * (its own root: maps shows paths inside a container's mount namespace as
 * the container sees them), or by inode (a chroot sharing our namespace
 * shows the full path).  On a match, *real is the mapped file's own stat,
 * through /proc/PID/map_files (on overlayfs: the layer's file, the one a
 * uprobe lands on).  Paths in maps are only compared, never used. */
static int maps_binary(int pid, const char *binary, const struct stat *seen, struct stat *real)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int found = 0;
	size_t blen = strlen(binary);
	while (!found && (len = getline(&line, &cap, f)) > 0) {
		unsigned long long start, end, ino;
		int name_at = 0;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (sscanf(line, "%llx-%llx %*s %*s %*s %llu %n", &start, &end, &ino, &name_at) < 3 || !name_at)
			continue;
		const char *name = line + name_at;
		int by_path = strncmp(name, binary, blen) == 0 && name[blen] == '\0';
		if (!by_path && ino != (unsigned long long)seen->st_ino)
			continue;
		char link[128];
		snprintf(link, sizeof link, "/proc/%d/map_files/%llx-%llx", pid, start, end);
		if (stat(link, real) == 0)
			found = 1;
		else if (by_path || ino == (unsigned long long)seen->st_ino) {
			*real = *seen; /* map_files needs CAP_SYS_ADMIN: the path's view */
			found = 1;
		}
	}
	free(line);
	fclose(f);
	return found;
}

int bx_target_discover(bx_target_t *t)
{
	if (!t->binary || t->binary[0] != '/')
		return 0;
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	int added = 0;
	size_t processes = 0;
	struct dirent *d;
	while ((d = readdir(proc)) != NULL) {
		char *endp;
		long pid = strtol(d->d_name, &endp, 10);
		if (*endp || pid <= 0 || pid == (long)getpid())
			continue;
		char root_path[PATH_MAX + 64];
		struct stat seen, real;
		if ((size_t)snprintf(root_path, sizeof root_path, "/proc/%ld/root%s", pid, t->binary) >= sizeof root_path ||
		    stat(root_path, &seen) != 0 || !S_ISREG(seen.st_mode))
			continue;
		bx_module_t *m = known_file(t, &seen);
		if (m) {
			processes += maps_binary((int)pid, t->binary, &seen, &real);
			continue;
		}
		if (!maps_binary((int)pid, t->binary, &seen, &real))
			continue; /* it has the file but does not run it */
		processes++;
		if ((m = known_file(t, &real)) != NULL) {
			/* one more view of a file attached already (another overlay) */
			continue;
		}
		char err[256];
		if (!(m = add_file_module(t, root_path, &real, &seen))) {
			closedir(proc);
			return -1;
		}
		if (read_file_probes(m, root_path, err, sizeof err) != 0 && strcmp(err, "out of memory") == 0) {
			closedir(proc);
			return -1;
		}
		added++;
	}
	closedir(proc);
	t->processes = processes;
	return added;
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
		fprintf(stderr, "billing-exporter: %s: %s\n", t->label, bp.unreadable[i]);
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
		if (!m || add_probe(m, p->name) != 0) {
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
		free(t->modules[i].path);
	}
	free(t->modules);
	free(t->binary);
	memset(t, 0, sizeof *t);
}
