/*
 * probes.h -- the USDT probes found in one module (an ELF file) and in a
 * target (a file, or every module a process has mapped).
 */
#ifndef BP_PROBES_H
#define BP_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "sdt_note.h"

typedef struct bp_probe {
	char *provider;
	char *name;
	char *arg_string;     /* as in the note, "" for none */
	int nargs;
	sdt_arg_t args[SDT_MAX_ARGS];
	uint64_t address;     /* probe site, link-time address after .stapsdt.base adjustment */
	uint64_t semaphore;   /* link-time address, 0 for none */
	int64_t address_offset;   /* file offset of the site, -1 when outside every PT_LOAD */
	int64_t semaphore_offset; /* file offset of the semaphore, -1 likewise */
	/* Filled for process targets only. */
	uint64_t runtime_address;   /* 0 when unknown */
	uint64_t runtime_semaphore; /* 0 when none or unknown */
	int traced;                 /* -1 unknown / not a process, 0 no, 1 yes */
	unsigned semaphore_value;
	size_t module;              /* index into bp_target_t.modules */
} bp_probe_t;

typedef struct bp_module {
	char *path;           /* as the user or /proc/PID/maps names it */
	int has_note_section; /* .note.stapsdt present (possibly empty) */
} bp_module_t;

typedef struct bp_target {
	const char *spec;     /* what the user typed */
	int is_process;
	int pid;
	bp_module_t *modules;
	size_t module_count;
	bp_probe_t *probes;
	size_t probe_count;
} bp_target_t;

/* Append a module; returns its index or (size_t)-1 when out of memory. */
size_t bp_target_add_module(bp_target_t *t, const char *path);
/* Append an empty probe; returns it or NULL when out of memory. */
bp_probe_t *bp_target_add_probe(bp_target_t *t);
void bp_target_free(bp_target_t *t);

/* Resolve spec (an ELF path, or a PID when all digits and no such file
 * exists) and read its probes.  Returns 0, or -1 with a one-line reason
 * (not naming the target: the caller prefixes it) in err. */
int bp_target_load(const char *spec, bp_target_t *t, char *err, size_t errlen);

#endif /* BP_PROBES_H */
