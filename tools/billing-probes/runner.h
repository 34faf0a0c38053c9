/*
 * runner.h -- run a program with a time limit, capturing its output.
 */
#ifndef BP_RUNNER_H
#define BP_RUNNER_H

#include <stddef.h>

/* Run argv (PATH searched) with a time limit; its stdout+stderr, up to
 * n-1 bytes, in out.  Returns the exit status, -1 when it could not run
 * (errno ENOENT: not found), -2 on timeout or a signal. */
int bp_run_capture(char *const argv[], char *out, size_t n, int timeout_ms);

#endif /* BP_RUNNER_H */
