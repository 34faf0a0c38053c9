/*
 * text_file.h -- a whole text file in memory.
 */
#ifndef PR_TEXT_FILE_H
#define PR_TEXT_FILE_H

#include <stddef.h>
#include <sys/stat.h>

/* The file at path, NUL-terminated, in a malloc'd buffer; *len gets its
 * length.  NULL with errno set when it cannot be opened or read, or
 * (EFBIG) when it is longer than max bytes. */
char *pr_read_text_file(const char *path, size_t max, size_t *len);

/* The same from an open descriptor, which is closed. */
char *pr_read_text_fd(int fd, size_t max, size_t *len);

/* path opened for reading with O_CLOEXEC, O_NONBLOCK (a FIFO must not hang
 * us) and the extra flags, and *st filled: the descriptor, or -1 with why
 * (strerror, "is a directory", "not a regular file") when it cannot be
 * opened or is not a regular file. */
int pr_open_regular(const char *path, int flags, struct stat *st, char *why, size_t whylen);

#endif /* PR_TEXT_FILE_H */
