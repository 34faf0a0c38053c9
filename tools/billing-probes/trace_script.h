/*
 * trace_script.h -- a bpftrace script resolved for one process: every
 * `usdt::PROVIDER:NAME` spec (empty path, the scripts' one spelling) becomes one
 * `usdt:/abs/module:PROVIDER:NAME` per module that carries the probe;
 * specs no module carries are dropped, and a clause whose specs all
 * vanish is dropped whole.  Everything else passes through unchanged.
 *
 * Why paths and a pid predicate rather than `bpftrace -p`: bpftrace 0.17
 * with -p cannot resolve a probe that sits in two modules of the process
 * even when each spec names its module ("Could not resolve symbol");
 * attached by path, each module's probe resolves on its own, and the
 * kernel raises each module's semaphore (uprobe ref_ctr).
 */
#ifndef BP_TRACE_SCRIPT_H
#define BP_TRACE_SCRIPT_H

#include <stddef.h>

#include "probe_reader.h"

/* What bp_trace_resolve() writes in used[] for a probe site. */
enum { BP_TRACE_UNUSED = 0,
       BP_TRACE_ATTACHED = 1, /* the resolved script attaches to it */
       BP_TRACE_LEFT_OUT = 2  /* named, but its path or name is unsafe */
};

/* Called once per dropped spec (the spec as written): no module carries
 * the probe at all (not for probes left out, see used[]). */
typedef void (*bp_dropped_fn)(const char *spec, void *ctx);

/* What the script is resolved for. */
typedef struct {
	const pr_probe_set_t *set;
	const int *pids; /* the processes to keep to: the predicate (none: every process) */
	size_t npids;
	/* bpftrace gets -p: every USDT probe written "usdt::PROVIDER:NAME",
	 * without a path (bpftrace 0.27 attaches a probe both by path and by
	 * -p when given both: every figure doubled) */
	int by_pid;
	bp_dropped_fn dropped; /* or NULL */
	void *ctx;
} bp_trace_target_t;

/* The probes the resolved program asks bpftrace to attach, as bpftrace
 * counts them in its "Attaching N probes..." or "Attached N probes". */
typedef struct {
	size_t specs; /* one per spec: BEGIN, END, interval:..., each USDT spec */
	size_t sites; /* the same, each USDT spec counted once per site */
	int unknown;  /* a spec bpftrace expands itself (a glob): not counted */
	/* a probe other than USDT, BEGIN, END and interval (a tracepoint, a
	 * kprobe...), whose actions bpftrace 0.27's -p would filter to the
	 * process (cswitch's sched_switch sees the process's threads switch
	 * in while another task runs) */
	int other_kinds;
} bp_trace_counts_t;

/* Resolve text (len bytes) for target into a malloc'd NUL-terminated
 * string.  With target->npids > 0 every clause made only of resolved USDT
 * specs gets the predicate "pid == PID" (several: "(pid == A || pid ==
 * B)"), anded with its own: specs with a path attach to every process
 * running that file.  npids 0: no predicate (every process of the file).
 * Each module is attached through its attach_path, and only when
 * bp_trace_path_is_safe() accepts it and bp_trace_name_is_safe() the
 * probe's name (else the probe is left out).  used (set->probe_count
 * bytes, or NULL) receives BP_TRACE_ATTACHED for every site the resolved
 * script attaches to, BP_TRACE_LEFT_OUT for one it names but leaves out
 * (the caller reports those, once per module or probe); counts (or NULL)
 * what bpftrace will say it attaches.  Returns NULL with a one-line reason
 * in err (out of memory, an unterminated comment, string or block). */
char *bp_trace_resolve(const char *text, size_t len, const bp_trace_target_t *target, unsigned char *used,
                       bp_trace_counts_t *counts, char *err, size_t errlen);

/* 1 when path can be written into a bpftrace program as it is: absolute,
 * made only of letters, digits and "/._-", no "//" or "/../", at most
 * 4000 bytes.  A path from /proc/PID/maps is another user's input: one
 * that fails is never pasted into a program (the module is left out). */
int bp_trace_path_is_safe(const char *path);

/* 1 when a provider or probe name from an ELF note can be written into a
 * program: 1 to 255 letters, digits and '_' (the ELF spelling of every
 * billing.d name).  The notes are as foreign as the paths: a name such as
 * "x {} BEGIN { system(...) } usdt:/a:b" matched by a glob spec would
 * otherwise become program text. */
int bp_trace_name_is_safe(const char *name);

#endif /* BP_TRACE_SCRIPT_H */
