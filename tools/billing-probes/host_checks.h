/*
 * host_checks.h -- the host checks of `billing-probes doctor`, one
 * function per check (host_checks.c: kernel, tracefs, privileges, sysctl;
 * tracer_checks.c: bpftrace, dtrace, optimized uprobes).
 */
#ifndef BP_HOST_CHECKS_H
#define BP_HOST_CHECKS_H

#include <sys/utsname.h>

#include "doctor_result.h"

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

/* Names the check r and fills *u; when uname() fails the check warns
 * "unknown: uname failed: REASON" and this returns -1. */
int bp_doctor_uname(bp_check_result_t *r, const char *name, struct utsname *u);

#endif /* BP_HOST_CHECKS_H */
