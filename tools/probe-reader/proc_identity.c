/*
 * proc_identity.c -- processes from /proc (proc_identity.h).
 */
#include "proc_identity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "probe_reader.h" /* pr_process_start_time */

/* The effective uid and the innermost NSpid of /proc/PID/status; -1 when
 * it cannot be read. */
static int read_status(pid_t pid, uid_t *uid, pid_t *ns_pid)
{
	char path[64], line[512];
	int got = 0;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	*ns_pid = pid; /* a kernel without NSpid has one PID namespace */
	while (f && fgets(line, sizeof line, f)) {
		unsigned long real, effective;
		if (sscanf(line, "Uid: %lu %lu", &real, &effective) == 2) {
			*uid = (uid_t)effective;
			got = 1;
		} else if (strncmp(line, "NSpid:", 6) == 0) {
			char *last = strrchr(line, '\t');
			long v = last ? strtol(last + 1, NULL, 10) : 0;
			if (v > 0)
				*ns_pid = (pid_t)v;
		}
	}
	if (f)
		fclose(f);
	return got ? 0 : -1;
}

int pr_proc_read(pid_t pid, pr_proc_t *out)
{
	memset(out, 0, sizeof *out);
	out->pid = pid;
	out->start_time = pid > 0 ? pr_process_start_time(pid) : 0;
	/* the status read is that process's only if the start time holds
	 * across it: a PID reused in between has a later one */
	if (!out->start_time || read_status(pid, &out->uid, &out->ns_pid) != 0 ||
	    pr_process_start_time(pid) != out->start_time)
		return -1;
	return 0;
}

int pr_proc_wrote(pid_t ns_pid, unsigned long long start_time, uid_t owner, pr_proc_t *out)
{
	return start_time && pr_proc_read(ns_pid, out) == 0 && out->start_time == start_time &&
	       out->ns_pid == ns_pid && out->uid == owner;
}

int pr_proc_each_mapping(pid_t pid, pr_mapping_fn fn, void *ctx)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	errno = 0;
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		/* START-END PERMS OFFSET MAJOR:MINOR INODE PATH */
		unsigned major, minor;
		unsigned long long ino;
		int at = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%*s %*s %*s %x:%x %llu %n", &major, &minor, &ino, &at) != 3 || ino == 0 ||
		    line[at] != '/')
			continue;
		rc = fn((unsigned long long)makedev(major, minor), ino, line + at, ctx);
	}
	int failed = rc == 0 && ferror(f);
	int err = errno;
	free(line);
	fclose(f);
	if (failed) {
		errno = err ? err : EIO;
		return -1;
	}
	return rc;
}
