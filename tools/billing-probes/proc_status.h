/*
 * proc_status.h -- one hex mask from /proc/PID/status (capabilities,
 * caught signals), for doctor and the trace launcher.
 */
#ifndef BP_PROC_STATUS_H
#define BP_PROC_STATUS_H

#include <sys/types.h>

/* FIELD ("CapEff", "SigCgt"...) of process PID (0: this process); 0 when
 * the process or the field is not there. */
unsigned long long bp_proc_status_mask(pid_t pid, const char *field);

#endif
