/*
 * file_replace.c -- a file written whole or not at all.  The temporary
 * file is made with mkstemp (O_EXCL: never another user's file or link in
 * a shared directory) beside the target, so rename() replaces the path in
 * one step; rename replaces a symbolic link itself, never its target.
 */
#include "file_replace.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int bp_replace_file(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char tmp[PATH_MAX];
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		snprintf(err, errlen, "not a file name");
		return -1;
	}
	int dir_len = slash ? (int)(slash - path + 1) : 0;
	if ((size_t)snprintf(tmp, sizeof tmp, "%.*s.%s.XXXXXX", dir_len, path, base) >= sizeof tmp) {
		snprintf(err, errlen, "path too long");
		return -1;
	}
	int fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a file in its directory: %s", strerror(errno));
		return -1;
	}
	mode_t mask = umask(0);
	umask(mask);
	const char *failed = NULL; /* the step that failed */
	if (fchmod(fd, 0666 & ~mask) != 0)
		failed = "set the mode of";
	else if (write_all(fd, data, len) != 0 || fsync(fd) != 0)
		failed = "write";
	int saved = errno;
	if (close(fd) != 0 && !failed) {
		failed = "write";
		saved = errno;
	}
	if (!failed && rename(tmp, path) != 0) {
		failed = "replace";
		saved = errno;
	}
	if (!failed)
		return 0;
	unlink(tmp);
	snprintf(err, errlen, "cannot %s it: %s", failed, strerror(saved));
	return -1;
}
