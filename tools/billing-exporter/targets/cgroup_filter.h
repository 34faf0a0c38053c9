/*
 * cgroup_filter.h -- --cgroup PATH: count only processes in that cgroup v2
 * or below it.
 *
 * The BPF programs ask the kernel at each fire (bpf_current_task_under_cgroup
 * on a cgroup array holding PATH's directory: descendants are under it, at
 * any depth, in any cgroup namespace).  The stats path asks /proc: a
 * segment's writer, checked to be the very process that wrote it (PID,
 * start time, and running as the file's owner: stats_targets.c), is in the
 * subtree when the "0::" line of /proc/PID/cgroup is PATH's cgroup or
 * below it.
 */
#ifndef BX_CGROUP_FILTER_H
#define BX_CGROUP_FILTER_H

#include <stddef.h>
#include <sys/types.h>

typedef struct bx_cgroup {
	char *given; /* PATH as the operator named it */
	char *path;  /* its cgroup as /proc/PID/cgroup names it here: "/", "/a/b" */
	int fd;      /* the directory, for the BPF programs' cgroup array */
} bx_cgroup_t;

/* Open PATH: an absolute path of a directory on a cgroup2 file system.
 * 0, or -1 with a one-line reason in err (a cgroup v1 hierarchy is named
 * as such: --cgroup needs cgroup v2). */
int bx_cgroup_open(const char *given, bx_cgroup_t *cg, char *err, size_t errlen);

/* Is process pid, started at start_time (clock ticks after boot, as
 * /proc/PID/stat says), in cg or below it?  1 yes, 0 no, -1 cannot tell:
 * the process is gone, its PID is another process's now (a reused PID,
 * or a PID from another PID namespace), or /proc does not say. */
int bx_cgroup_holds(const bx_cgroup_t *cg, pid_t pid, unsigned long long start_time);

void bx_cgroup_close(bx_cgroup_t *cg);

#endif /* BX_CGROUP_FILTER_H */
