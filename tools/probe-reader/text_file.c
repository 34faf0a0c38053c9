/*
 * text_file.c -- read a whole (small) text file: a kernel config, a
 * bpftrace script.
 */
#include "text_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *read_stream(FILE *f, size_t max, size_t *len);

char *pr_read_text_file(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "r");
	return f ? read_stream(f, max, len) : NULL;
}

char *pr_read_text_fd(int fd, size_t max, size_t *len)
{
	FILE *f = fdopen(fd, "r");
	if (!f) {
		int saved = errno;
		close(fd);
		errno = saved;
		return NULL;
	}
	return read_stream(f, max, len);
}

int pr_open_regular(const char *path, int flags, struct stat *st, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
	const char *problem = NULL;

	if (fd < 0 || fstat(fd, st) != 0)
		problem = strerror(errno);
	else if (!S_ISREG(st->st_mode))
		problem = S_ISDIR(st->st_mode) ? "is a directory" : "not a regular file";
	if (problem == NULL)
		return fd;
	snprintf(why, whylen, "%s", problem);
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Reads f to its end and closes it. */
static char *read_stream(FILE *f, size_t max, size_t *len)
{
	size_t cap = 1 << 16, n = 0, got;
	char *text = malloc(cap);
	while (text && (got = fread(text + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n > max) {
			free(text);
			text = NULL;
			errno = EFBIG;
			break;
		}
		if (n == cap - 1) {
			char *grown = realloc(text, cap * 2);
			if (!grown) {
				free(text);
				text = NULL;
				errno = ENOMEM;
				break;
			}
			text = grown;
			cap *= 2;
		}
	}
	int read_error = ferror(f);
	fclose(f);
	if (text && read_error) {
		free(text);
		errno = EIO;
		return NULL;
	}
	if (!text)
		return NULL;
	text[n] = '\0';
	*len = n;
	return text;
}
