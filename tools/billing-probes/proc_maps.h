/*
 * proc_maps.h -- a live process: its mapped ELF files and its memory.
 */
#ifndef BP_PROC_MAPS_H
#define BP_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes.h"

/* Read every ELF file pid has mapped into t (is_process set), compute
 * each probe's run-time addresses and read its semaphore ("traced").
 * Returns 0, or -1 with a one-line reason in err: no such process, it
 * exited while being read, permission denied. */
int bp_proc_load(pid_t pid, bp_target_t *t, char *err, size_t errlen);

/* Read n bytes of pid's memory at addr.  0, or -1 with errno. */
int bp_proc_read_memory(pid_t pid, uint64_t addr, void *buf, size_t n);

#endif /* BP_PROC_MAPS_H */
