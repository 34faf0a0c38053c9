/*
 * targets.h -- what a --pid or --binary target carries: the modules with
 * billing probes and the probes in each.
 *
 * A --binary PATH target of a program (program_target.c) is every
 * process, in any mount namespace, now or later, whose executable is the
 * file at PATH inside its own root: the probes of that file and of the
 * libraries it loads (its DT_NEEDED closure, and what the maps of each
 * process running it show), counted for those processes only (the BPF
 * filter on the firing task's executable: program_files.h).  A --binary
 * of a library is every process that maps it.  One module per distinct
 * file (the inode the process maps, so one file reached through several
 * roots is attached once); bx_target_discover() looks for new ones (a
 * container started or restarted from a new image).
 */
#ifndef BX_TARGETS_H
#define BX_TARGETS_H

#include <stddef.h>
#include <sys/types.h>

#include "target_types.h"

/* Read the billing probes of process pid (binary NULL) or of the ELF file
 * binary (pid -1: the file at PATH here, and at PATH in the root of every
 * running process that maps it).  0, or -1 with a one-line reason in err:
 * no such process, not an ELF file, no billing probes...; then t holds
 * nothing. */
int bx_target_read(bx_target_t *t, int pid, const char *binary, long only_uid, char *err, size_t errlen);

/* --binary targets: look through /proc for processes running PATH inside
 * their root from a file not yet among t's modules (and, for a program,
 * libraries its processes map that are not), and add those files
 * (attached 0).  Returns how many modules were added, or -1 when out of
 * memory.  A no-op for pid targets and relative paths. */
int bx_target_discover(bx_target_t *t);

/* 1 while the process lives (pid targets: the same process, not a later
 * one given its PID), or (binaries) while the file exists here or a
 * process ran it at the last discovery; 0 for a skipped target. */
int bx_target_alive(const bx_target_t *t);

void bx_target_free(bx_target_t *t);

/* The --pid and --binary targets served through USDT. */
typedef struct bx_targets {
	bx_target_t *items;
	size_t count;
} bx_targets_t;

/* Read every target (bx_target_read): 0, or -1 after one line on stderr
 * ("--pid PID: ..."); those read so far stay in ts. */
int bx_targets_read(bx_targets_t *ts, const char *const *pids, size_t npids, const char *const *binaries,
                    size_t nbinaries, long only_uid);
void bx_targets_free(bx_targets_t *ts);

/* --- one process counted once (target_overlap.c) ----------------------------- */

/* The --binary targets: how many; and which one counts process pid (the
 * index of the first whose program it runs or whose library it maps), -1
 * none, -2 when its executable or memory maps cannot be read. */
size_t bx_binary_target_count(const bx_targets_t *ts);
int bx_binary_target_of(const bx_targets_t *ts, pid_t pid);
/* 1 when binary target b has a module with probes for the file (dev, ino). */
int bx_target_has_file(const bx_target_t *b, unsigned long long dev, unsigned long long ino);

/* Targets that would count a process twice, refused: two --binary of one
 * file, a --binary of a library that a --binary program loads, a --pid
 * process that runs a --binary program or maps a --binary library.  0,
 * or -1 with a one-line reason in err.  (A --pid served from its stats
 * segment is the stats source's to compare: stats_source.h.) */
int bx_targets_check_overlap(const bx_targets_t *ts, char *err, size_t errlen);

#endif /* BX_TARGETS_H */
