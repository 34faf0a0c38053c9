/*
 * program_target.h -- a --binary target whose PATH is a program: the
 * processes running it, with the libraries they load (targets.h).
 * Private to targets.c, and to attach.c for the idle files it detaches.
 */
#ifndef BX_PROGRAM_TARGET_H
#define BX_PROGRAM_TARGET_H

#include <stddef.h>
#include <sys/types.h>

#include "targets.h"

/* t->binary, a program file here, already t's first module: its
 * identity as the BPF filter sees it, and the libraries it loads (found
 * as the dynamic loader finds them) that carry billing probes, as
 * modules.  A library not found is one line on stderr (the maps of a
 * process running it show it later).  0, or -1 with a one-line reason in
 * err. */
int bx_program_target_start(bx_target_t *t, char *err, size_t errlen);

/* Look through /proc for processes running t's program: a process whose
 * executable is the file at PATH inside its own root, from a file not
 * seen before, adds that file; a process seen for the first or second
 * time adds the files with billing probes its maps show that t lacks.
 * Sets t->processes and t->discovered; returns how many files were added
 * (modules, and program files for the BPF map), or -1 when out of
 * memory. */
int bx_program_target_discover(bx_target_t *t);

/* 1 when process pid runs a program file of t, 0 when not, -1 when its
 * executable cannot be looked at. */
int bx_program_target_runs(const bx_target_t *t, pid_t pid);

/* A program file of t that no process has run for idle_s seconds
 * (--idle-detach), other than the file at PATH here: taken out of t with
 * its module, into *gone and (its module's path) path, for the caller to
 * detach and take out of the BPF filter.  1, or 0 when there is none. */
int bx_program_target_take_idle(bx_target_t *t, long long idle_s, bx_program_file_t *gone, char *path,
                                size_t pathlen);

#endif /* BX_PROGRAM_TARGET_H */
