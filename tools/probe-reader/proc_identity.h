/*
 * proc_identity.h -- who a process is and which files it maps, as the
 * kernel says (/proc), never as a file it wrote says.  The stats path
 * (stats_targets.c, stats_segments.c) names a segment's writer with these facts; a segment's
 * own header only has to agree with them (docs/security.md).
 */
#ifndef PR_PROC_IDENTITY_H
#define PR_PROC_IDENTITY_H

#include <sys/types.h>

typedef struct pr_proc {
	pid_t pid;                     /* here */
	pid_t ns_pid;                  /* what it calls itself (getpid()): the last NSpid of /proc/PID/status */
	uid_t uid;                     /* its effective uid, as this host sees it */
	unsigned long long start_time; /* clock ticks after boot (/proc/PID/stat field 22) */
} pr_proc_t;

/* Process pid as it runs now.  0, or -1 when it is gone (or a zombie), or
 * its PID was given to a later process while it was read. */
int pr_proc_read(pid_t pid, pr_proc_t *out);

/* The process that wrote a segment whose header says it is ns_pid,
 * started at start_time, in a file owned by owner: read from /proc under
 * that PID (this host's namespace), it must be running with that start
 * time, call itself ns_pid and run as owner.  1 when it is, into *out; 0
 * when no running process is (gone, another PID namespace's, or a header
 * that names a process of another user). */
int pr_proc_wrote(pid_t ns_pid, unsigned long long start_time, uid_t owner, pr_proc_t *out);

/* Call fn for each mapping of process pid that names a file (device,
 * inode, path as the process sees it), until fn returns non-zero.
 * Returns what fn returned, 0 when every mapping was seen, or -1 with
 * errno when the maps cannot be read (EACCES: another user's process and
 * no CAP_SYS_PTRACE; ENOENT: gone). */
typedef int (*pr_mapping_fn)(unsigned long long dev, unsigned long long ino, const char *path, void *ctx);
int pr_proc_each_mapping(pid_t pid, pr_mapping_fn fn, void *ctx);

#endif /* PR_PROC_IDENTITY_H */
