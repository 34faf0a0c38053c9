/*
 * trace_output.h -- what `trace` does with bpftrace's output: stdout
 * passed on (blank_trim.h), stderr passed on line by line less the host
 * noise every run would print, and nothing of the script shown until
 * bpftrace has said how many probes it attaches and that number is the
 * one the resolved program asks for.
 *
 * The number: bpftrace 0.17 and 0.23 print "Attaching N probes..." on
 * stdout before they attach, N counting each site of a USDT probe;
 * 0.27 prints "Attached N probes" on stderr once attached, one per probe
 * spec.  bpftrace 0.27 attached a path-qualified USDT probe twice when
 * given -p as well, so every figure read double, silently: a count other
 * than the one asked for is refused, the figures never shown.
 *
 * A map update that fails loses what it counted: bpftrace 0.23 creates a
 * map key with BPF_NOEXIST, so when two CPUs add one new key at the same
 * instant one count is lost, and it prints, on stdout, "WARNING: File
 * exists" and "Additional Info - helper: map_update_elem, retcode: -17".
 * From that line on nothing more of the script is shown (the gate turns
 * BP_GATE_LOST; the caller refuses in one line at the end).  Unless the
 * update that failed is a sum(0), which adds nothing: the scripts make
 * each new key of a per-CPU map so, before they count into it, and such
 * a failure (its WARNING, source and marker lines) is dropped.
 *
 * The noise dropped from stderr (docs/tool.md, "What trace shows"):
 * "couldn't set RLIMIT_MEMLOCK" (bpftrace raises the limit, which kernels
 * from 5.11 on no longer use for BPF: kept on older kernels, where it
 * matters), and 0.27's "Could not read functions from
 * .../available_filter_functions" (a host that hides the list of kprobe
 * targets; the scripts use none).
 */
#ifndef BP_TRACE_OUTPUT_H
#define BP_TRACE_OUTPUT_H

#include <stddef.h>

#include "blank_trim.h"
#include "text_buf.h"

enum { BP_GATE_WAIT = 0, /* holding stdout until the attach line */
       BP_GATE_OPEN,     /* the count is the one asked for (or not checked) */
       BP_GATE_REFUSED,  /* it is not: nothing of the script shown */
       BP_GATE_LOST      /* a map update failed: nothing more shown */
};

typedef struct {
	int out_fd, err_fd; /* bpftrace's stdout and stderr; -1 once at end of file */
	size_t lines;       /* whole stdout lines read so far */
	int first_is_attaching;
	bp_blank_trim_t trim;
	pr_buf_t held;       /* stdout not shown yet (gate waiting) */
	pr_buf_t out_line;   /* the stdout line under way */
	pr_buf_t warning;    /* a runtime WARNING line, shown once the next line is not a failed update */
	pr_buf_t err_line;   /* the stderr line under way */
	size_t want;         /* probes asked for; 0: not checked */
	size_t got;          /* probes bpftrace said, once it has */
	size_t lost;         /* failed map updates that lost a count */
	int update_line;     /* after a failed update: 1 its source line is next, 2 its marker line */
	pr_buf_t update_src; /* that source line */
	int gate;
	int drop_memlock;
} bp_trace_output_t;

/* Start reading bpftrace's stdout (out_fd) and stderr (err_fd), both
 * made non-blocking.  want: the probes the program asks for (0: not
 * checked, the gate opens at once). */
void bp_trace_output_init(bp_trace_output_t *t, int out_fd, int err_fd, size_t want);

/* Wait up to timeout_ms for output and handle all there is.  1 when some
 * was read. */
int bp_trace_output_pass(bp_trace_output_t *t, int timeout_ms);

/* Has the script printed a line (BEGIN's)?  bpftrace's "Attaching N
 * probes..." comes first, before it attaches, and does not count. */
int bp_trace_output_script_printed(const bp_trace_output_t *t);

/* Read what is left, pass it on (or hold it), close both. */
void bp_trace_output_finish(bp_trace_output_t *t);

/* After finish: show what is held when the gate still waits (bpftrace
 * ended before its attach line, having printed only errors), and free it. */
void bp_trace_output_release(bp_trace_output_t *t);

#endif
