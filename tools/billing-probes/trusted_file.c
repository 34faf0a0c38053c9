/*
 * trusted_file.c -- ownership and mode checks on a file and the
 * directories above it (trusted_file.h).
 */
#include "trusted_file.h"
#include "text_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Owned by root or by us, writable by nobody else. */
static int owner_ok(const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == geteuid();
}

static const char *file_problem(const struct stat *st)
{
	if (!owner_ok(st))
		return "owned by another user";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by its group or by others";
	return NULL;
}

static const char *dir_problem(const struct stat *st)
{
	if (!owner_ok(st))
		return "in a directory owned by another user";
	/* /tmp: others may write, but only the owner of an entry (or of the
	 * directory) may rename or remove it */
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !((st->st_mode & S_ISVTX) && st->st_uid == 0))
		return "in a directory others may write";
	return NULL;
}

/* Every directory above the absolute, resolved path real. */
static const char *dirs_problem(const char *real, char *which, size_t n)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", real);
	for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		struct stat st;
		const char *why = stat(dir, &st) != 0 ? "in a directory that cannot be examined" : dir_problem(&st);
		if (why) {
			snprintf(which, n, "%s", dir);
			return why;
		}
		if (slash == dir)
			break;
	}
	return NULL;
}

/* real (n bytes) <- path resolved; its directories checked. */
static int resolve_checked(const char *path, char *real, size_t n, char *why, size_t whylen)
{
	char resolved[PATH_MAX], dir[PATH_MAX];
	if (!realpath(path, resolved)) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	const char *problem = dirs_problem(resolved, dir, sizeof dir);
	if (problem) {
		snprintf(why, whylen, "not trusted: %s (%s)", problem, dir);
		return -1;
	}
	if (strlen(resolved) >= n) {
		snprintf(why, whylen, "path too long");
		return -1;
	}
	memcpy(real, resolved, strlen(resolved) + 1);
	return 0;
}

int bp_open_trusted(const char *path, char *real, size_t n, char *why, size_t whylen)
{
	if (resolve_checked(path, real, n, why, whylen) != 0)
		return -1;
	struct stat st;
	int fd = pr_open_regular(real, O_NOFOLLOW, &st, why, whylen);
	if (fd < 0)
		return -1;
	const char *problem = file_problem(&st);
	if (problem) {
		snprintf(why, whylen, "not trusted: %s", problem);
		close(fd);
		return -1;
	}
	return fd;
}

/* Checked as a program: the resolved file and its directories. */
static int check_program(const char *path, char *out, size_t n, char *why, size_t whylen)
{
	if (resolve_checked(path, out, n, why, whylen) != 0)
		return -2;
	struct stat st;
	if (stat(out, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		return -2;
	}
	const char *problem = file_problem(&st);
	if (problem) {
		snprintf(why, whylen, "not trusted: %s", problem);
		return -2;
	}
	return 0;
}

int bp_find_program(const char *name, const char *env_var, char *out, size_t n, char *why, size_t whylen)
{
	const char *given = env_var ? getenv(env_var) : NULL;
	if (given && *given) {
		if (given[0] != '/') {
			snprintf(why, whylen, "$%s must be an absolute path (it is never looked up in PATH)", env_var);
			return -2;
		}
		int rc = access(given, X_OK) == 0 ? check_program(given, out, n, why, whylen) : -1;
		if (rc == -1)
			snprintf(why, whylen, "%s", strerror(errno));
		if (rc != 0) {
			char first[PATH_MAX + 600];
			snprintf(first, sizeof first, "$%s=%s: %s", env_var, given, why);
			snprintf(why, whylen, "%s", first);
		}
		return rc;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		char candidate[PATH_MAX];
		if (path[0] == '/' && len + 1 + strlen(name) < sizeof candidate) {
			snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, path, name);
			struct stat st;
			if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0) {
				int rc = check_program(candidate, out, n, why, whylen);
				if (rc != 0) {
					char first[PATH_MAX + 600];
					snprintf(first, sizeof first, "%s: %s", candidate, why);
					snprintf(why, whylen, "%s", first);
				}
				return rc;
			}
		}
		path += len;
		if (*path == ':')
			path++;
	}
	snprintf(why, whylen, "not found in PATH");
	return -1;
}
