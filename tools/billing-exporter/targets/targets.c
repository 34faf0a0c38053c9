/*
 * targets.c -- with program_target.c, where billing-exporter reads the
 * probes a process or file carries through the probe reader
 * (tools/probe-reader/probe_reader.h), so `billing-probes list` and the
 * exporter agree on what a process carries.  (Its other callers take a
 * process's start time, cgroup_filter.c and proc_identity.c, and the
 * text helpers and terminal escaper.)
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

#include "report.h"
#include "target_modules.h" /* the probe reader library: tools/probe-reader */

/* Has t a module for the file (dev, ino), or refused it?  (pr_binary_scan's
 * question.) */
static int known_file(unsigned long long dev, unsigned long long ino, void *ctx)
{
	return bx_module_of_file(ctx, dev, ino) != NULL || bx_target_refused(ctx, dev, ino);
}

/* A file not seen before: a module, with the probes read through the
 * process's root (a file without billing probes stays, with none, so it
 * is not read again every second). */
static int new_file(const pr_binary_file_t *f, void *ctx)
{
	bx_target_t *t = ctx;
	struct stat st;
	if (stat(f->root_path, &st) != 0 || (unsigned long long)st.st_dev != f->path_dev ||
	    (unsigned long long)st.st_ino != f->path_ino)
		return 0; /* replaced meanwhile: the next look sees the new file */
	if (!bx_target_admits(t, f->pid, &st, f->dev, f->ino, t->module_count))
		return 0;
	bx_module_t *m = bx_module_add(t, f->root_path, f->dev, f->ino, f->path_dev, f->path_ino);
	if (!m)
		return -1;
	char err[256];
	if (bx_module_read(m, f->root_path, err, sizeof err) != 0 && strcmp(err, "out of memory") == 0)
		return -1;
	t->discovered++;
	return 0;
}

int bx_target_discover(bx_target_t *t)
{
	if (!t->binary || t->binary[0] != '/')
		return 0;
	if (t->program)
		return bx_program_target_discover(t);
	t->discovered = 0;
	if (!t->seen && !(t->seen = pr_binary_seen_new()))
		return -1;
	long processes = pr_binary_scan_seen(t->binary, t->seen, known_file, new_file, t);
	if (processes < 0)
		return -1;
	t->processes = (size_t)processes;
	return t->discovered;
}

static void bx_target_free(bx_target_t *t);

/* Read the billing probes of process pid (binary NULL) or of the ELF file
 * binary (pid -1: the file at PATH here, and at PATH in the root of every
 * running process that maps it).  0, or -1 with a one-line reason in err:
 * no such process, not an ELF file, no billing probes...; then t holds
 * nothing. */
static int bx_target_read(bx_target_t *t, int pid, const char *binary, long only_uid, char *err, size_t errlen)
{
	pr_probe_set_t bp;

	memset(t, 0, sizeof *t);
	t->owner_uid = -1;
	t->only_uid = only_uid;
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
			t->owner_uid = (long)st.st_uid;
			bx_module_t *m = bx_module_add(t, binary, st.st_dev, st.st_ino, st.st_dev, st.st_ino);
			rc = m ? bx_module_read(m, binary, err, errlen) : -1;
			if (!m)
				snprintf(err, errlen, "out of memory");
			/* a program: the processes running it, with the
			 * libraries it loads */
			if (rc == 0 && (t->program = pr_elf_is_program(binary, err, errlen)) < 0)
				rc = -1;
			if (rc == 0 && t->program)
				rc = bx_program_target_start(t, err, errlen);
		} else if (binary[0] != '/') {
			snprintf(err, errlen, "no such file");
			rc = -1;
		} else {
			/* only in other roots: a program when some process
			 * runs the file there, else a library */
			t->program = 1;
		}
		/* ... and the files at PATH in other processes' roots */
		if (rc == 0 && bx_target_discover(t) < 0) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
		if (rc == 0 && !t->on_host && t->program_count == 0) {
			t->program = 0;
			if (bx_target_discover(t) < 0) {
				snprintf(err, errlen, "out of memory");
				rc = -1;
			}
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
	t->start_time = pr_process_start_time((pid_t)pid);
	memset(&bp, 0, sizeof bp);
	if (pr_probe_set_load_pid((pid_t)pid, &bp, err, errlen) != 0) {
		pr_probe_set_free(&bp);
		bx_target_free(t);
		return -1;
	}
	/* A mapped file the reader could not read may hold probes: said, not
	 * dropped silently (the probes of the others are attached). */
	for (size_t i = 0; i < bp.unreadable_count; i++)
		bx_error("%s: %s", t->label, bp.unreadable[i]);
	int rc = 0;
	for (size_t i = 0; i < bp.probe_count && rc == 0; i++) {
		const pr_probe_t *p = &bp.probes[i];
		if (strcmp(p->provider, BX_PROVIDER) != 0)
			continue;
		/* Attach through a path that reaches the very file the process
		 * maps from here: its own path, or /proc/PID/root/PATH for a
		 * process in another mount namespace (a container). */
		const pr_module_t *mod = &bp.modules[p->module];
		if (!mod->attach_path) {
			snprintf(err, errlen, "%.300s: no path from here reaches the file the process maps", mod->path);
			rc = -1;
			break;
		}
		bx_module_t *m = bx_module_for_path(t, mod->attach_path);
		if (m && !m->dev && !m->ino) { /* the file mapped: what a --binary's uprobe would land on too */
			m->dev = m->path_dev = mod->dev;
			m->ino = m->path_ino = mod->ino;
		}
		if (!m || bx_module_add_probe(m, p) != 0) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
	}
	pr_probe_set_free(&bp);
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
	return t->start_time && pr_process_start_time((pid_t)t->pid) == t->start_time;
}

static void bx_target_free(bx_target_t *t)
{
	for (size_t i = 0; i < t->module_count; i++)
		bx_module_free(&t->modules[i]);
	free(t->modules);
	free(t->binary);
	free(t->programs);
	free(t->running);
	free(t->mapped);
	free(t->refused);
	pr_binary_seen_free(t->seen);
	memset(t, 0, sizeof *t);
}

int bx_pid_parse(const char *s)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	return errno || *end || end == s || v <= 0 || v > 0x7fffffffL ? -1 : (int)v;
}

int bx_targets_read(bx_targets_t *ts, const char *const *pids, size_t npids, const char *const *binaries,
                    size_t nbinaries, long only_uid)
{
	char err[512];
	if (npids + nbinaries && !(ts->items = calloc(npids + nbinaries, sizeof *ts->items))) {
		bx_error("out of memory");
		return -1;
	}
	for (size_t i = 0; i < npids + nbinaries; i++) {
		const char *binary = i < npids ? NULL : binaries[i - npids];
		int pid = binary ? 0 : bx_pid_parse(pids[i]);
		if (pid < 0) {
			bx_error("--pid %s: not a process ID", pids[i]);
			return -1;
		}
		if (bx_target_read(&ts->items[i], pid, binary, only_uid, err, sizeof err) != 0) {
			if (binary)
				bx_error("--binary %s: %s", binary, err);
			else
				bx_error("--pid %d: %s", pid, err);
			return -1;
		}
		ts->count++;
	}
	return 0;
}

void bx_targets_free(bx_targets_t *ts)
{
	for (size_t i = 0; i < ts->count; i++)
		bx_target_free(&ts->items[i]);
	free(ts->items);
	memset(ts, 0, sizeof *ts);
}
