/*
 * targets.h -- what a --pid or --binary target carries: the modules with
 * billing probes and the probes in each.
 */
#ifndef BX_TARGETS_H
#define BX_TARGETS_H

#include <stddef.h>

typedef struct bx_module {
	char *path;
	char **probes; /* ELF spelling, "payment__auth"; each once */
	size_t probe_count;
} bx_module_t;

typedef struct bx_target {
	char label[300];               /* "pid:123" or "binary:/usr/bin/billingd" */
	int pid;                       /* -1 for a binary: every process, now or later */
	char *binary;                  /* the path given with --binary, else NULL */
	unsigned long long start_time; /* of process pid when read: a reused PID differs */
	bx_module_t *modules;
	size_t module_count;
} bx_target_t;

/* Read the billing probes of process pid (binary NULL) or of the ELF file
 * binary (pid -1).  0, or -1 with a one-line reason in err: no such
 * process, not an ELF file, no billing probes...; then t holds nothing. */
int bx_target_read(bx_target_t *t, int pid, const char *binary, char *err, size_t errlen);

/* 1 when some module of t carries probe. */
int bx_target_has_probe(const bx_target_t *t, const char *probe);
int bx_module_has_probe(const bx_module_t *m, const char *probe);

/* 1 while the process lives (pid targets: the same process, not a later
 * one given its PID) or the file exists (binaries). */
int bx_target_alive(const bx_target_t *t);

void bx_target_free(bx_target_t *t);

#endif /* BX_TARGETS_H */
