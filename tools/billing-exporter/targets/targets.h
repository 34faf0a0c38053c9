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
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "program_files.h"

/* --- what a target is made of -------------------------------------------- */

/* One probe site of a module, as its note gives it. */
typedef struct bx_site {
	size_t probe;      /* index into the module's probes */
	int64_t offset;    /* file offset of the site; -1 outside every PT_LOAD */
	int64_t semaphore; /* file offset of its semaphore; 0 none, -1 outside */
	char *args;        /* the note's argument string */
} bx_site_t;

typedef struct bx_module {
	char *path;    /* what to attach to: the mapped path, or /proc/PID/root/PATH */
	char **probes; /* ELF spelling, "payment__auth"; each once */
	size_t probe_count;
	bx_site_t *sites;
	size_t site_count, site_cap;
	/* --binary: the file (device, inode) mapped, and the one the path
	 * shows (differs on overlayfs: the merged view vs the layer's file) */
	unsigned long long dev, ino, path_dev, path_ino;
	int attached; /* attach.c has attached its probes */
} bx_module_t;

/* A process running a program file of a --binary PROGRAM target.  Its
 * memory maps are looked at when it is first seen and at the next look
 * through /proc, by when the dynamic loader has mapped every library it
 * starts with. */
typedef struct bx_running {
	int pid;
	unsigned long long start_time;
	int looks; /* times its maps were looked at */
	int seen;  /* by the current look through /proc */
} bx_running_t;

/* A file as a line of /proc/PID/maps names it (MAJOR:MINOR INODE). */
typedef struct bx_mapped {
	unsigned long long dev, ino;
} bx_mapped_t;

typedef struct bx_target {
	char label[300];               /* "pid:123" or "binary:/usr/bin/billingd" */
	int pid;                       /* -1 for a binary: every process, now or later */
	char *binary;                  /* the path given with --binary, else NULL */
	unsigned long long start_time; /* of process pid when read: a reused PID differs */
	int on_host;                   /* --binary: PATH exists in our own root */
	size_t processes;              /* --binary: processes running it at the last discovery */
	int discovered;                /* --binary: files added by the last discovery */
	int skipped;                   /* libbpf refused one of its modules: nothing of it attached */
	bx_module_t *modules;
	size_t module_count;
	/* --binary of a program: its links count only the processes running
	 * one of these files (program_target.c) */
	int program;
	bx_program_file_t *programs;
	size_t program_count;
	bx_running_t *running; /* the processes running them at the last look */
	size_t running_count;
	bx_mapped_t *mapped; /* every file their maps showed, looked at already */
	size_t mapped_count;
	/* --binary: who may put a file at PATH (bx_foreign_file_trusted),
	 * the files refused (each said once, none attached), and the
	 * processes the scanner has looked at */
	long owner_uid; /* of the file at PATH here; -1 none */
	long only_uid;  /* --uid; -1 none */
	bx_mapped_t *refused;
	size_t refused_count;
	int capped;                  /* the BX_FILES_PER_PATH line is said */
	struct pr_binary_seen *seen; /* a --binary library's (probe_reader.h) */
} bx_target_t;

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

/* The --pid and --binary targets served through USDT. */
typedef struct bx_targets {
	bx_target_t *items;
	size_t count;
} bx_targets_t;

/* A --pid's process ID, or -1 when text is none. */
int bx_pid_parse(const char *text);

/* Read every target: 0, or -1 after one line on stderr
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

/* Targets that would count a process twice, refused: two --binary of one
 * file, a --binary of a library that a --binary program loads, a --pid
 * process that runs a --binary program or maps a --binary library.  0,
 * or -1 with a one-line reason in err.  (A --pid served from its stats
 * segment is the stats source's to compare: stats_source.h.) */
int bx_targets_check_overlap(const bx_targets_t *ts, char *err, size_t errlen);

/* --- a --binary of a program (program_target.c) -------------------------- */

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

#endif /* BX_TARGETS_H */
