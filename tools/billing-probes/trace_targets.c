/*
 * trace_targets.c -- the modules `trace` resolves a script for.
 *
 * -p and -c: every module the processes map (the probe reader), merged
 * so that a file mapped by several of them is one module.  --binary:
 * each PATH as a file here, and the files at PATH inside the roots of
 * running processes (containers), merged likewise: `--binary ./svc
 * --binary /usr/lib/libbillingprobes.so.0` is one program whose probes
 * live in two files, each attached where it lives.  A file found only
 * inside another process's root is named in one line on stderr: its
 * processes count too (two chroots running two services at one path
 * are counted together, which the operator must see).
 */
#include "trace_targets.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "term_text.h"

/* pr_binary_scan's callbacks for --binary: has set the file (dev, ino)?
 * Add a file found inside a process's root, keyed by the file mapped. */
static int set_has_file(unsigned long long dev, unsigned long long ino, void *ctx)
{
	const pr_probe_set_t *set = ctx;
	for (size_t m = 0; m < set->module_count; m++)
		if (set->modules[m].dev == dev && set->modules[m].ino == ino)
			return 1;
	return 0;
}

static int add_found_file(const pr_binary_file_t *file, void *ctx)
{
	pr_probe_set_t *set = ctx, one;
	char err[512];
	memset(&one, 0, sizeof one);
	if (pr_probe_set_add_file(&one, file->root_path, err, sizeof err) != 0) {
		char what[64];
		snprintf(what, sizeof what, "--binary in process %d", file->pid);
		bp_error(what, err); /* that file is left out */
		pr_probe_set_free(&one);
		return 0;
	}
	one.modules[0].dev = file->dev;
	one.modules[0].ino = file->ino;
	int first = set->module_count == 0, rc = pr_probe_set_merge(set, &one);
	pr_probe_set_free(&one);
	if (rc == 0) {
		fflush(stdout);
		pr_printf_escaped(stderr,
		                  first ? "billing-probes: trace: --binary: %s, the file at that path in the root of process %d "
		                          "(a container or chroot): every process running it counts"
		                        : "billing-probes: trace: --binary: also %s, another file at that path in the root of "
		                          "process %d (a container or chroot): every process running it counts too",
		                  file->root_path, file->pid);
		fputc('\n', stderr);
	}
	return rc;
}

/* One --binary PATH merged into set: the file here, if any, and the
 * files at PATH inside other processes' roots (the path as containers
 * see it).  0, or -1 after the one error line. */
static int load_binary(const char *binary, pr_probe_set_t *set)
{
	char abs[PATH_MAX], err[512];
	pr_probe_set_t one;
	memset(&one, 0, sizeof one);
	int rc = -1, here = realpath(binary, abs) != NULL;
	if (!here && (errno != ENOENT || binary[0] != '/'))
		bp_error(binary, errno == ENOENT ? "no such file" : strerror(errno));
	else if (here && pr_probe_set_add_file(&one, abs, err, sizeof err) != 0)
		bp_error(binary, err);
	else if (binary[0] == '/' && pr_binary_scan(binary, set_has_file, add_found_file, &one) < 0)
		bp_error("trace", "out of memory");
	else if (one.module_count == 0)
		bp_error(binary, "no such file (here, or at that path in the root of a running process)");
	else if (pr_probe_set_merge(set, &one) != 0)
		bp_error("trace", "out of memory");
	else
		rc = 0;
	pr_probe_set_free(&one);
	return rc;
}

int bp_trace_load_targets(const bp_options_t *opt, const char *pid_text, pr_probe_set_t *set, int *pids,
                          size_t *npids, int *bare_pid)
{
	*npids = 0;
	*bare_pid = 0;
	memset(set, 0, sizeof *set);
	if (opt->binary_count) {
		set->spec = opt->binaries[0];
		for (int k = 0; k < opt->binary_count; k++)
			if (load_binary(opt->binaries[k], set) != 0)
				return -1;
		return 0;
	}
	if (pid_text || opt->target_count == 1) {
		const char *spec = pid_text ? pid_text : opt->targets[0];
		if (bp_cli_load_target(spec, set) != 0)
			return -1;
		if (!set->is_process) {
			bp_error(spec, "-p needs the PID of a running process");
			return -1;
		}
		pids[(*npids)++] = set->pid;
		return 0;
	}
	for (int k = 0; k < opt->target_count; k++) {
		pr_probe_set_t one;
		int rc = bp_cli_load_target(opt->targets[k], &one);
		if (rc == 0 && !one.is_process) {
			bp_error(opt->targets[k], "-p needs the PID of a running process");
			rc = -1;
		} else if (rc == 0 && one.probe_count == 0 && !*bare_pid) {
			*bare_pid = one.pid;
		}
		if (rc != 0) {
			pr_probe_set_free(&one);
			return -1;
		}
		int dup = 0;
		for (size_t i = 0; i < *npids; i++)
			dup |= pids[i] == one.pid;
		if (!dup)
			pids[(*npids)++] = one.pid;
		rc = pr_probe_set_merge(set, &one);
		pr_probe_set_free(&one);
		if (rc != 0) {
			bp_error("trace", "out of memory");
			return -1;
		}
	}
	set->is_process = 1;
	set->pid = pids[0];
	return 0;
}

const pr_module_t *bp_trace_loaded_carrier(const pr_probe_set_t *needed, const char *spec, size_t len)
{
	char text[512];
	if (len >= sizeof text || len < 6 || strncmp(spec, "usdt::", 6) != 0)
		return NULL;
	memcpy(text, spec + 6, len - 6);
	text[len - 6] = '\0';
	char *name = strchr(text, ':');
	if (!name)
		return NULL;
	*name++ = '\0';
	for (size_t i = 0; i < needed->probe_count; i++) {
		const pr_probe_t *p = &needed->probes[i];
		if (strcmp(p->provider, text) == 0 && fnmatch(name, p->name, 0) == 0)
			return &needed->modules[p->module];
	}
	return NULL;
}
