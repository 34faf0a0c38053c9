/*
 * stats_trust.c -- the directories and files the stats path reads
 * (stats_trust.h).
 */
#include "stats_trust.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_identity.h"

#define DEFAULT_NAME "billing-stats-"

const char *pr_user_text(uid_t uid, char *buf, size_t n)
{
	struct passwd *pw = getpwuid(uid);
	if (pw && pw->pw_name)
		snprintf(buf, n, "uid %u (%s)", (unsigned)uid, pw->pw_name);
	else
		snprintf(buf, n, "uid %u", (unsigned)uid);
	return buf;
}

long pr_stats_dir_user(const char *path, long only_uid)
{
	if (only_uid >= 0)
		return only_uid;
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	size_t start = n;
	while (start > 0 && path[start - 1] != '/')
		start--;
	const char *name = path + start;
	size_t len = n - start, prefix = strlen(DEFAULT_NAME);
	if (len <= prefix || len - prefix > 10 || strncmp(name, DEFAULT_NAME, prefix) != 0)
		return -1;
	long uid = 0;
	for (size_t i = prefix; i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		uid = uid * 10 + (name[i] - '0');
	}
	return uid <= 0xfffffffeL ? uid : -1;
}

int pr_stats_dir_open(const char *path, long expected, int how, int *fd, uid_t *user, char *err, size_t errlen)
{
	struct stat st;
	char owner[128], want[128];

	*fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &st) != 0) {
		snprintf(err, errlen, "%s", errno == ELOOP ? "a symbolic link, not a directory" : strerror(errno));
		goto fail;
	}
	pr_user_text(st.st_uid, owner, sizeof owner);
	if (expected < 0 && st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "belongs to %s, neither root nor this exporter's user: name the user whose "
		                      "segments it holds with --uid",
		         owner);
		goto fail;
	}
	if (expected >= 0 && st.st_uid != (uid_t)expected && (how == PR_OWNER_ONLY || st.st_uid != 0)) {
		snprintf(err, errlen, "belongs to %s, not to %s whose segments it should hold: made by another user?",
		         owner, pr_user_text((uid_t)expected, want, sizeof want));
		goto fail;
	}
	if ((st.st_mode & 022) && (how == PR_OWNER_ONLY || !(st.st_mode & S_ISVTX))) {
		snprintf(err, errlen, "writable by others (mode %04o%s): anyone could put segments there",
		         (unsigned)(st.st_mode & 07777), how == PR_OWNER_ONLY ? "" : ", not sticky");
		goto fail;
	}
	*user = expected >= 0 ? (uid_t)expected : st.st_uid;
	return 0;
fail:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return -1;
}

int pr_stats_file_open(int dfd, const char *name, uid_t user, struct stat *st, int *why, char *err,
                       size_t errlen)
{
	char owner[128], want[128];
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	*why = PR_FILE_UNREADABLE;
	if (fd < 0 || fstat(fd, st) != 0) {
		int e = errno;
		snprintf(err, errlen, "%s", e == ELOOP ? "a symbolic link, not a segment" : strerror(e));
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(st->st_mode))
		snprintf(err, errlen, "not a regular file");
	else if (st->st_uid != user) {
		*why = PR_FILE_OTHER_USER;
		snprintf(err, errlen, "belongs to %s, not to %s", pr_user_text(st->st_uid, owner, sizeof owner),
		         pr_user_text(user, want, sizeof want));
	} else if (st->st_mode & 022)
		snprintf(err, errlen, "writable by others (mode %04o)", (unsigned)(st->st_mode & 07777));
	else
		return fd;
	close(fd);
	errno = EPERM;
	return -1;
}

/* pr_proc_each_mapping's callback: the first "N.stats" file a process
 * maps, into a bx_mapped_segment_t. */
typedef struct bx_mapped_segment {
	char path[PATH_MAX];
	unsigned long long dev, ino;
} bx_mapped_segment_t;

static int stats_mapping(unsigned long long dev, unsigned long long ino, const char *path, void *ctx)
{
	bx_mapped_segment_t *m = ctx;
	size_t n = strlen(path);
	if (n < 7 || strcmp(path + n - 6, ".stats") != 0 || n >= sizeof m->path)
		return 0; /* a " (deleted)" one too: gone from its directory */
	memcpy(m->path, path, n + 1);
	m->dev = dev;
	m->ino = ino;
	return 1;
}

int pr_stats_segment_place(pid_t pid, pid_t ns_pid, uid_t user, pr_segment_place_t *p)
{
	bx_mapped_segment_t m;
	memset(&m, 0, sizeof m);
	memset(p, 0, sizeof *p);
	int r = pr_proc_each_mapping(pid, stats_mapping, &m);
	if (r > 0) {
		char *slash = strrchr(m.path, '/');
		*slash = '\0';
		snprintf(p->dir, sizeof p->dir, "/proc/%d/root%s", (int)pid, m.path);
		snprintf(p->name, sizeof p->name, "%s", slash + 1);
		p->dev = m.dev;
		p->ino = m.ino;
		return 1;
	}
	if (r == 0)
		return -1;
	snprintf(p->dir, sizeof p->dir, "/dev/shm/billing-stats-%u", (unsigned)user);
	snprintf(p->name, sizeof p->name, "%d.stats", (int)ns_pid);
	return 0;
}
