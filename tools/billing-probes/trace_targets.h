/*
 * trace_targets.h -- what `trace` attaches to: the modules of the
 * processes named (-p, -c) or of the files named (--binary), read into
 * one probe set.
 */
#ifndef BP_TRACE_TARGETS_H
#define BP_TRACE_TARGETS_H

#include <stddef.h>

#include "cli.h"
#include "probe_reader.h"

/* Read what the command line names into set: the one -c child (pid_text)
 * or -p PID, several -p PIDs (merged: one service), or every --binary
 * PATH (merged: a program and the libraries it loads, one file once).
 * pids (room for opt->target_count + 1) gets the processes to keep to,
 * none for --binary; *bare_pid the first of several -p that carries no
 * USDT probe at all (0: none), for the caller to refuse when the script
 * counts USDT probes.  0, or -1 after the one error line. */
int bp_trace_load_targets(const bp_options_t *opt, const char *pid_text, pr_probe_set_t *set, int *pids,
                          size_t *npids, int *bare_pid);

/* The module of needed (the libraries the --binary files load:
 * pr_probe_set_load_needed) that carries the probe a dropped spec
 * ("usdt::PROVIDER:NAME", len bytes, NAME possibly a glob) names, or
 * NULL: what to add as another --binary. */
const pr_module_t *bp_trace_loaded_carrier(const pr_probe_set_t *needed, const char *spec, size_t len);

#endif /* BP_TRACE_TARGETS_H */
