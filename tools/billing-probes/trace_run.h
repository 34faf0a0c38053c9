/*
 * trace_run.h -- run bpftrace for `trace` (cmd_trace.c resolves the
 * program; this runs it).
 */
#ifndef BP_TRACE_RUN_H
#define BP_TRACE_RUN_H

#include <stddef.h>
#include <sys/types.h>

#include "bpftrace_version.h"
#include "probe_reader.h"

typedef struct {
	char **argv;                          /* bpftrace's, NULL-terminated */
	size_t want;                          /* probes it must say it attaches (0: not checked) */
	const bp_bpftrace_version_t *version; /* named in a refusal */
	const int *pids;                      /* the processes traced, and their start times: */
	const unsigned long long *starts;     /* all gone, bpftrace is stopped */
	size_t npids;
	pid_t command;             /* a -c command stopped at its entry point, or -1 */
	const pr_probe_set_t *set; /* with used: the semaphores that say */
	const unsigned char *used; /* bpftrace has attached (-c) */
} bp_trace_run_t;

/* Run bpftrace, holding its output until it says it attached r->want
 * probes; a stopped command goes on once bpftrace is attached, or is
 * killed if bpftrace ends first or its attachment is refused: either way
 * *released.  bpftrace's exit status (128+N for a signal), or
 * BP_EXIT_ERROR when it could not be started or was refused (one line). */
int bp_trace_run(const bp_trace_run_t *r, int *released);

#endif
