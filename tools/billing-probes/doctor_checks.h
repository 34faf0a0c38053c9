/*
 * doctor_checks.h -- the host checks of `billing-probes doctor`, one
 * function per check.  Each fills a result: a status, a one-line finding
 * and, when not OK, the fix.
 */
#ifndef BP_DOCTOR_CHECKS_H
#define BP_DOCTOR_CHECKS_H

#include <stddef.h>

typedef enum { BP_OK, BP_WARN, BP_FAIL } bp_status_t;

typedef struct bp_check_result {
	const char *name;
	bp_status_t status;
	char finding[512];
	char fix[512];
} bp_check_result_t;

void bp_doctor_kernel(bp_check_result_t *r);
void bp_doctor_kernel_uprobes(bp_check_result_t *r);
void bp_doctor_kernel_bpf(bp_check_result_t *r);
void bp_doctor_tracefs(bp_check_result_t *r);
void bp_doctor_privileges(bp_check_result_t *r);
void bp_doctor_perf_event_paranoid(bp_check_result_t *r);
/* bpftrace and dtrace; *usable set when that tool can trace. */
void bp_doctor_bpftrace(bp_check_result_t *r, int *usable);
void bp_doctor_dtrace(bp_check_result_t *r, int *usable);
void bp_doctor_optimized_uprobes(bp_check_result_t *r);

/* Run argv with a time limit; its stdout+stderr, up to n-1 bytes, in out.
 * Returns the exit status, -1 when it could not run (errno ENOENT: not
 * found), -2 on timeout or a signal. */
int bp_run_capture(char *const argv[], char *out, size_t n, int timeout_ms);

#endif /* BP_DOCTOR_CHECKS_H */
