/*
 * trusted_file.h -- files billing-probes runs (bpftrace, dtrace) or hands
 * to a tracer as program text (a bpftrace script), checked before use.
 *
 * The tool runs as root.  A file another user can write, or can swap by
 * renaming in a directory they can write, is that user's program run as
 * root.  So a file is taken only when it and every directory above it
 * (after symbolic links are resolved) belong to root or to the user
 * running the tool, and nobody else can write them; a directory others
 * may write is allowed only with the sticky bit and owned by root (/tmp:
 * nobody else can rename or remove a file there).  The checked, resolved
 * path is what is used afterwards, so a link cannot be re-pointed between
 * the check and the use.
 */
#ifndef BP_TRUSTED_FILE_H
#define BP_TRUSTED_FILE_H

#include <stddef.h>

/* Resolve path, check it as above and open it for reading (regular files
 * only).  Returns the descriptor, with the resolved path in real (n
 * bytes), or -1 with a one-line reason in why. */
int bp_open_trusted(const char *path, char *real, size_t n, char *why, size_t whylen);

/* The program a tracer command names: $ENV_VAR when set (env_var may be NULL) (an absolute
 * path; never looked up in PATH), else NAME in the absolute directories
 * of PATH (relative entries such as "." are skipped).  0 with the checked,
 * resolved path in out; -1 not found, -2 found but not to be trusted;
 * either way a one-line reason in why. */
int bp_find_program(const char *name, const char *env_var, char *out, size_t n, char *why, size_t whylen);

#endif /* BP_TRUSTED_FILE_H */
