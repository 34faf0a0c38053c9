/*
 * text_file.h -- a whole text file in memory.
 */
#ifndef BP_TEXT_FILE_H
#define BP_TEXT_FILE_H

#include <stddef.h>

/* The file at path, NUL-terminated, in a malloc'd buffer; *len gets its
 * length.  NULL with errno set when it cannot be opened or read, or
 * (EFBIG) when it is longer than max bytes. */
char *bp_read_text_file(const char *path, size_t max, size_t *len);

/* The same from an open descriptor, which is closed. */
char *bp_read_text_fd(int fd, size_t max, size_t *len);

#endif /* BP_TEXT_FILE_H */
