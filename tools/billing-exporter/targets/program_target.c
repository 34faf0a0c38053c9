/*
 * program_target.c -- a --binary target whose PATH is a program
 * (targets.h).
 *
 * A service built against libbillingprobes.so carries its timing
 * helpers' probes (request-*, transaction-*, db-query-*, gateway-call-*)
 * in the library, which every other program using the library maps too.
 * So the target attaches the library's files for every process, as it
 * attaches the program's own, and the BPF programs count a fire of its
 * links only when the firing task's executable is one of the target's
 * program files (program_files.h).  Which libraries: the program's
 * DT_NEEDED closure, found as the dynamic loader finds it (attached
 * before the first process starts), and the files the maps of each
 * process running it show (the truth for a process: another
 * LD_LIBRARY_PATH, a container's own copy, a preload).
 *
 * A process runs the program when its /proc/PID/exe is the file at PATH
 * inside its own root (/proc/PID/root/PATH): a worker forked from it, or
 * a later process started from the same file, counts from its first fire
 * with nothing to find first; a new file at PATH (a new image, a
 * rollout) counts once a look through /proc has found a process running
 * it, and only when bx_target_admits() admits it: any user can give a
 * process a root of his own in which PATH is his file (unshare -Urm and
 * a bind mount).
 */
#include "targets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "proc_identity.h"  /* pr_proc_each_mapping */
#include "target_modules.h" /* the probe reader */
#include "ticker.h"

static bx_program_file_t *program_of(const bx_target_t *t, unsigned long long dev, unsigned long long ino)
{
	for (size_t i = 0; i < t->program_count; i++)
		if (t->programs[i].dev == dev && t->programs[i].ino == ino)
			return &t->programs[i];
	return NULL;
}

static int add_program(bx_target_t *t, const bx_program_file_t *pf)
{
	bx_program_file_t *grown = realloc(t->programs, (t->program_count + 1) * sizeof *grown);
	if (!grown)
		return -1;
	t->programs = grown;
	grown[t->program_count] = *pf;
	grown[t->program_count++].run_at = (long long)bx_seconds(CLOCK_MONOTONIC);
	return 0;
}

int bx_program_target_take_idle(bx_target_t *t, long long idle_s, bx_program_file_t *gone, char *path,
                                size_t pathlen)
{
	long long now = (long long)bx_seconds(CLOCK_MONOTONIC);
	struct stat here;
	int have_here = t->on_host && stat(t->binary, &here) == 0;
	for (size_t i = 0; i < t->program_count; i++) {
		bx_program_file_t *pf = &t->programs[i];
		if (now - pf->run_at < idle_s ||
		    (have_here && (unsigned long long)here.st_dev == pf->dev && (unsigned long long)here.st_ino == pf->ino))
			continue;
		*gone = *pf;
		const bx_module_t *m = bx_module_of_file(t, pf->dev, pf->ino);
		snprintf(path, pathlen, "%s", m ? m->path : "a program file");
		bx_module_remove(t, pf->dev, pf->ino);
		memmove(pf, pf + 1, (t->program_count - i - 1) * sizeof *pf);
		t->program_count--;
		return 1;
	}
	return 0;
}

int bx_program_target_runs(const bx_target_t *t, pid_t pid)
{
	unsigned long long dev, ino;
	if (bx_process_program(pid, &dev, &ino) != 0)
		return -1;
	return program_of(t, dev, ino) != NULL;
}

/* --- the libraries a process maps ---------------------------------------- */

/* Files as maps lines name them, each once. */
typedef struct mapped_list {
	bx_mapped_t *items;
	size_t count;
} mapped_list_t;

/* pr_proc_each_mapping: the files of a process t has not looked at. */
typedef struct new_mappings {
	const bx_target_t *t;
	mapped_list_t files;
} new_mappings_t;

static int collect_new(unsigned long long dev, unsigned long long ino, const char *path, void *ctx)
{
	new_mappings_t *n = ctx;
	(void)path;
	if (bx_mapped_in(n->t->mapped, n->t->mapped_count, dev, ino))
		return 0;
	return bx_mapped_add(&n->files.items, &n->files.count, dev, ino);
}

/* A library counts for t's processes only when t's program's owner put it
 * there: owned by root or by the owner of one of t's program files, and
 * writable by nobody else.  Another user who runs the program with his
 * own copy of a library (LD_LIBRARY_PATH, LD_PRELOAD) would otherwise
 * have the notes of his file, and its fires, counted as the service's.
 * 1 trusted; 0 with why. */
static int trusted_library(const bx_target_t *t, const pr_module_t *mod, char *why, size_t whylen)
{
	struct stat st;
	if (stat(mod->attach_path, &st) != 0 || (unsigned long long)st.st_dev != mod->dev ||
	    (unsigned long long)st.st_ino != mod->ino) {
		snprintf(why, whylen, "replaced while being read");
		return 0;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "writable by %s", st.st_mode & S_IWOTH ? "anyone" : "its group");
		return 0;
	}
	for (size_t i = 0; st.st_uid != 0 && i < t->program_count; i++)
		if (t->programs[i].uid == st.st_uid)
			return 1;
	if (st.st_uid != 0)
		snprintf(why, whylen, "owned by uid %u, neither root nor the program's owner", (unsigned)st.st_uid);
	return st.st_uid == 0;
}

/* The modules of process set bp with billing probes that t lacks, added
 * when trusted (one line for each refused).  -1 when out of memory. */
static int add_process_modules(bx_target_t *t, const pr_probe_set_t *bp)
{
	for (size_t mi = 0; mi < bp->module_count; mi++) {
		const pr_module_t *mod = &bp->modules[mi];
		int billing = 0;
		char why[128];
		for (size_t i = 0; i < bp->probe_count && !billing; i++)
			billing = bp->probes[i].module == mi && strcmp(bp->probes[i].provider, BX_PROVIDER) == 0;
		if (!billing || bx_module_of_file(t, mod->dev, mod->ino))
			continue;
		if (!mod->attach_path) {
			bx_error("%s: %s: no path from here reaches the file process %d maps: its probes are not counted",
			         t->label, mod->path, bp->pid);
			continue;
		}
		if (!program_of(t, mod->dev, mod->ino) && !trusted_library(t, mod, why, sizeof why)) {
			bx_error("%s: %s, a library %s maps, is %s: its probes are not counted", t->label, mod->path,
			         bp->is_process ? "a process running it" : "it", why);
			continue;
		}
		bx_module_t *m = bx_module_add(t, mod->attach_path, mod->dev, mod->ino, mod->dev, mod->ino);
		if (!m)
			return -1;
		for (size_t i = 0; i < bp->probe_count; i++)
			if (bp->probes[i].module == mi && strcmp(bp->probes[i].provider, BX_PROVIDER) == 0 &&
			    bx_module_add_probe(m, &bp->probes[i]) != 0)
				return -1;
		t->discovered++;
	}
	return 0;
}

/* Look at the maps of process pid: when they show files not looked at
 * yet, read the process's modules (the reader), add those t lacks, and
 * remember the files (those mapped after the first look are new at the
 * next).  -1 when out of memory; a process gone meanwhile is not an
 * error. */
static int look_at_maps(bx_target_t *t, pid_t pid)
{
	new_mappings_t n = { t, { NULL, 0 } };
	int rc = pr_proc_each_mapping(pid, collect_new, &n);
	if (rc != 0 || n.files.count == 0) {
		free(n.files.items);
		return rc != 0 && errno == ENOMEM ? -1 : 0; /* out of memory; gone; nothing new */
	}
	pr_probe_set_t bp;
	char err[256];
	memset(&bp, 0, sizeof bp);
	if (pr_probe_set_load_pid(pid, &bp, err, sizeof err) == 0) {
		for (size_t i = 0; i < bp.unreadable_count; i++)
			bx_error("%s: process %d: %s", t->label, (int)pid, bp.unreadable[i]);
		rc = add_process_modules(t, &bp);
		for (size_t i = 0; rc == 0 && i < n.files.count; i++)
			rc = bx_mapped_add(&t->mapped, &t->mapped_count, n.files.items[i].dev, n.files.items[i].ino);
	} else {
		rc = strcmp(err, "out of memory") == 0 ? -1 : 0;
	}
	pr_probe_set_free(&bp);
	free(n.files.items);
	return rc;
}

/* --- the processes running it ---------------------------------------------- */

static bx_running_t *running_entry(bx_target_t *t, int pid, unsigned long long start_time)
{
	for (size_t i = 0; i < t->running_count; i++)
		if (t->running[i].pid == pid && t->running[i].start_time == start_time)
			return &t->running[i];
	bx_running_t *grown = realloc(t->running, (t->running_count + 1) * sizeof *grown);
	if (!grown)
		return NULL;
	t->running = grown;
	grown[t->running_count] = (bx_running_t){ pid, start_time, 0, 0 };
	return &grown[t->running_count++];
}

static void forget_gone(bx_target_t *t)
{
	size_t kept = 0;
	for (size_t i = 0; i < t->running_count; i++)
		if (t->running[i].seen)
			t->running[kept++] = t->running[i];
	t->running_count = kept;
}

/* Process pid runs (dev, ino), not one of t's program files: when that is
 * the file at PATH inside its root, add it (as the BPF filter will see it)
 * and its probes.  1 added, 0 not PATH's file, -1 out of memory. */
static int new_program_file(bx_target_t *t, int pid, unsigned long long dev, unsigned long long ino)
{
	char root_path[4200], exe[64];
	struct stat seen;
	if ((size_t)snprintf(root_path, sizeof root_path, "/proc/%d/root%s", pid, t->binary) >= sizeof root_path ||
	    stat(root_path, &seen) != 0 || !S_ISREG(seen.st_mode) || (unsigned long long)seen.st_dev != dev ||
	    (unsigned long long)seen.st_ino != ino)
		return 0;
	if (!bx_target_admits(t, (pid_t)pid, &seen, dev, ino, t->program_count))
		return 0;
	snprintf(exe, sizeof exe, "/proc/%d/exe", pid);
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	bx_program_file_t pf;
	char err[256];
	int rc = bx_program_file_read(fd, (pid_t)pid, &pf, err, sizeof err);
	close(fd);
	if (rc != 0 || pf.dev != dev || pf.ino != ino) {
		if (rc != 0)
			bx_error("%s: %s: %s: not counted", t->label, root_path, err);
		return 0; /* or it ran something else meanwhile */
	}
	if (add_program(t, &pf) != 0)
		return -1;
	t->discovered++; /* a program file for the BPF map, if not a module */
	if (bx_module_of_file(t, dev, ino))
		return 1;
	bx_module_t *m = bx_module_add(t, root_path, dev, ino, dev, ino);
	if (!m)
		return -1;
	if (bx_module_read(m, root_path, err, sizeof err) != 0 && strcmp(err, "out of memory") == 0)
		return -1;
	return 1;
}

int bx_program_target_discover(bx_target_t *t)
{
	if (!t->binary || t->binary[0] != '/')
		return 0;
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	t->discovered = 0;
	for (size_t i = 0; i < t->running_count; i++)
		t->running[i].seen = 0;
	size_t processes = 0;
	int rc = 0;
	struct dirent *d;
	while (rc == 0 && (d = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);
		unsigned long long dev, ino;
		if (*end || pid <= 0 || pid == (long)getpid() || bx_process_program((pid_t)pid, &dev, &ino) != 0)
			continue;
		bx_program_file_t *known = program_of(t, dev, ino);
		if (known)
			known->run_at = (long long)bx_seconds(CLOCK_MONOTONIC);
		else if (bx_target_refused(t, dev, ino) || (rc = new_program_file(t, (int)pid, dev, ino)) <= 0)
			continue;
		rc = 0;
		processes++;
		unsigned long long start = pr_process_start_time((pid_t)pid);
		bx_running_t *r = start ? running_entry(t, (int)pid, start) : NULL;
		if (start && !r)
			rc = -1;
		if (!r)
			continue;
		r->seen = 1;
		if (r->looks < 2) {
			r->looks++;
			rc = look_at_maps(t, (pid_t)pid);
		}
	}
	closedir(proc);
	forget_gone(t);
	t->processes = processes;
	return rc < 0 ? -1 : t->discovered;
}

int bx_program_target_start(bx_target_t *t, char *err, size_t errlen)
{
	bx_program_file_t pf;
	int fd = open(t->binary, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	int rc = bx_program_file_read(fd, 0, &pf, err, errlen);
	close(fd);
	if (rc != 0)
		return -1;
	if (pf.dev != t->modules[0].dev || pf.ino != t->modules[0].ino) {
		snprintf(err, errlen, "replaced while being read");
		return -1;
	}
	if (add_program(t, &pf) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pr_probe_set_t program, needed;
	memset(&program, 0, sizeof program);
	memset(&needed, 0, sizeof needed);
	rc = pr_probe_set_add_file(&program, t->binary, err, errlen);
	if (rc == 0)
		rc = pr_probe_set_load_needed(&program, 1, &needed, err, errlen);
	for (size_t i = 0; rc == 0 && i < needed.missing_count; i++)
		bx_error("%s: %s, which %s loads, is not found here (%s): its probes count once a process running it "
		         "shows where it maps it from",
		         t->label, needed.missing[i].name, needed.missing[i].needed_by, needed.missing[i].why);
	for (size_t i = 0; rc == 0 && i < needed.unreadable_count; i++)
		bx_error("%s: %s", t->label, needed.unreadable[i]);
	if (rc == 0 && add_process_modules(t, &needed) != 0) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	t->discovered = 0;
	pr_probe_set_free(&program);
	pr_probe_set_free(&needed);
	return rc;
}
