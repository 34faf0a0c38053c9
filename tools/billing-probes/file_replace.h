/*
 * file_replace.h -- write a whole file so that a reader sees the old one
 * or the new one, never a part: a temporary file in the same directory,
 * renamed over the path once it is complete.
 */
#ifndef BP_FILE_REPLACE_H
#define BP_FILE_REPLACE_H

#include <stddef.h>

/* data[0..len) as the file at path (mode 0666 less the umask).  0, or -1
 * with one line in err; then nothing is left behind and what was at path
 * is untouched. */
int bp_replace_file(const char *path, const char *data, size_t len, char *err, size_t errlen);

#endif /* BP_FILE_REPLACE_H */
