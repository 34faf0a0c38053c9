/*
 * semaphore_guard.h -- may doctor write a semaphore where a note says it
 * is?
 *
 * A stapsdt note is the word of whoever built the file, and a write
 * through /proc/PID/mem overrides page protections: a note whose
 * "semaphore" points into .text or .rodata had doctor write zeros into
 * code (the process died of SIGSEGV), and one in a file a root process
 * had mapped read-only as data had doctor change root's memory.  So a
 * counter is written only when all of these hold, read afresh from the
 * file and /proc/PID/maps just before the write:
 *
 *   - in the module's ELF, the 2 bytes lie inside one allocated section,
 *     ".probes" (where sys/sdt.h puts semaphores), writable, not
 *     executable, inside a writable, non-executable PT_LOAD segment;
 *   - in the process, they lie inside one mapping that is rw-p (writable,
 *     private), backed by the module's very file (device and inode) at
 *     the file offset the ELF gives;
 *   - the module is part of the process's program, not a data mapping of
 *     the file: the probe's site lies in an executable mapping of the
 *     same file, loaded at the same bias as the semaphore.
 */
#ifndef BP_SEMAPHORE_GUARD_H
#define BP_SEMAPHORE_GUARD_H

#include <stddef.h>

#include "probe_reader.h"

/* 0 when p's semaphore in process set->pid passes every check above;
 * -1 with a one-line reason in why. */
int bp_semaphore_guard(const pr_probe_set_t *set, const pr_probe_t *p, char *why, size_t n);

#endif /* BP_SEMAPHORE_GUARD_H */
