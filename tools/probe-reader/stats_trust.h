/*
 * stats_trust.h -- which directories and files of stats segments the
 * tools read (billing-exporter, billing-probes top), as whose (docs/security.md, "Stats segments": the rule
 * in words).
 *
 * A directory of segments has an expected user: the one --uid names, else
 * the UID of a directory named billing-stats-UID (the writer's default
 * name), else its owner when that is root or the exporter's own user.  It
 * must be owned by that user (or root), opened without following a last
 * symbolic link, and writable by nobody else unless sticky (then others
 * may add files but not replace the user's).  A segment file must be a
 * regular file of the expected user that nobody else may write.
 */
#ifndef PR_STATS_TRUST_H
#define PR_STATS_TRUST_H

#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* How a directory's owner is checked. */
enum { PR_OWNER_OR_ROOT, /* a --stats-dir: the expected user or root */
       PR_OWNER_ONLY,    /* where a --pid's segment is: that process's user, as the writer insists */
};

/* The expected user of --stats-dir path: only_uid (--uid) when >= 0, else
 * the UID of a last component "billing-stats-UID", else -1. */
long pr_stats_dir_user(const char *path, long only_uid);

/* Open directory path to read segments of user `expected` (-1: whoever
 * owns it, when that is root or this exporter's effective user).  0 with
 * *fd and the user in *user, or -1 with a one-line reason in err. */
int pr_stats_dir_open(const char *path, long expected, int how, int *fd, uid_t *user, char *err, size_t errlen);

/* Why pr_stats_file_open() refused a file (the exporter's skip reasons
 * use the same numbers). */
enum { PR_FILE_UNREADABLE = 1, /* anything but the next */
       PR_FILE_OTHER_USER = 2, /* another user's file */
};

/* Open name in directory dfd as a segment of user `user`.  The fd, its
 * stat in *st, or -1 with a one-line reason in err and *why set to
 * PR_FILE_OTHER_USER or PR_FILE_UNREADABLE (errno says ENOENT for a file
 * that is gone). */
int pr_stats_file_open(int dfd, const char *name, uid_t user, struct stat *st, int *why, char *err,
                       size_t errlen);

/* "uid 998 (billing)" or "uid 998", into buf. */
const char *pr_user_text(uid_t uid, char *buf, size_t n);

/* Where process pid's segment is.  1: the "N.stats" file it maps, in
 * dir (through /proc/PID/root, so a container's path resolves) with its
 * device and inode; 0: its maps cannot be read here (another user's
 * process), so NSPID.stats in /dev/shm/billing-stats-UID of its user
 * (dev and ino 0), the writer's default place; -1: its maps say it maps
 * none. */
typedef struct pr_segment_place {
	char dir[PATH_MAX + 64];
	char name[NAME_MAX + 1];
	unsigned long long dev, ino;
} pr_segment_place_t;

int pr_stats_segment_place(pid_t pid, pid_t ns_pid, uid_t user, pr_segment_place_t *p);

#endif /* PR_STATS_TRUST_H */
