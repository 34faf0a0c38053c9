/*
 * start_stopped.h -- start a command and leave it stopped at its entry
 * point: the dynamic loader has mapped every library it needs, no code of
 * the program has run.  What `trace -c` hands bpftrace as a PID.
 */
#ifndef BP_START_STOPPED_H
#define BP_START_STOPPED_H

#include <stddef.h>
#include <sys/types.h>

/* Split command_line at blanks (as bpftrace -c does), start it, stop it
 * at its entry point (SIGSTOP, not traced).  Returns its PID, or -1 with
 * a one-line reason in err. */
pid_t bp_start_stopped(const char *command_line, char *err, size_t errlen);

#endif /* BP_START_STOPPED_H */
