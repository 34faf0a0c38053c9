/*
 * target_types.h -- what a target is made of (targets.h says what a
 * --pid or --binary target carries): its modules, their probe sites, the
 * processes and files a --binary has seen.  Types only, below every file
 * that builds or reads targets.
 */
#ifndef BX_TARGET_TYPES_H
#define BX_TARGET_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "program_files.h"

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
	struct bp_binary_seen *seen; /* a --binary library's (probe_reader.h) */
} bx_target_t;

#endif /* BX_TARGET_TYPES_H */
