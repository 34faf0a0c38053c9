/*
 * target_overlap.c -- one process counted once (targets.h): which
 * --binary counts a process, and targets that would count a fire twice
 * refused before anything is attached.
 */
#include <stdio.h>

#include "proc_identity.h" /* pr_proc_each_mapping */
#include "targets.h"

/* Does target b (a --binary) have a module with probes for the file
 * (dev, ino)? */
static int bx_target_has_file(const bx_target_t *b, unsigned long long dev, unsigned long long ino)
{
	for (size_t i = 0; i < b->module_count; i++) {
		const bx_module_t *m = &b->modules[i];
		if (m->probe_count && ((m->dev == dev && m->ino == ino) || (m->path_dev == dev && m->path_ino == ino)))
			return 1;
	}
	return 0;
}

/* A module of a with probes that b has too, or NULL. */
static const bx_module_t *shared_module(const bx_target_t *a, const bx_target_t *b)
{
	for (size_t k = 0; k < a->module_count; k++)
		if (a->modules[k].probe_count && bx_target_has_file(b, a->modules[k].dev, a->modules[k].ino))
			return &a->modules[k];
	return NULL;
}

/* Do programs a and b share a program file? */
static int same_program(const bx_target_t *a, const bx_target_t *b)
{
	for (size_t i = 0; i < a->program_count; i++)
		for (size_t k = 0; k < b->program_count; k++)
			if (a->programs[i].kdev == b->programs[k].kdev && a->programs[i].kino == b->programs[k].kino)
				return 1;
	return 0;
}

/* Would binary targets a and b (a before b) count a fire twice?  Two
 * programs do when they share a program file; a program and a library
 * when the program loads it; two libraries when they are one file. */
static int binaries_overlap(const bx_target_t *a, const bx_target_t *b, char *err, size_t errlen)
{
	if (a->program && b->program ? same_program(a, b) : !a->program && !b->program && shared_module(a, b)) {
		snprintf(err, errlen, "--binary %s and --binary %s name one file: it would count twice", a->binary,
		         b->binary);
		return 1;
	}
	const bx_target_t *program = a->program ? a : b, *library = a->program ? b : a;
	if (a->program != b->program && shared_module(library, program)) {
		snprintf(err, errlen, "--binary %s is a library --binary %s loads, whose probes that target counts in "
		                      "its processes: they would count twice (--binary %s alone counts them; name the "
		                      "library alone to count every process mapping it)",
		         library->binary, program->binary, program->binary);
		return 1;
	}
	return 0;
}

/* Would --pid target a and binary target b count a fire twice?  When a's
 * process runs b's program, or maps b's library. */
static int pid_overlaps(const bx_target_t *a, const bx_target_t *b, char *err, size_t errlen)
{
	const bx_module_t *m = NULL;
	int runs = b->program ? bx_program_target_runs(b, a->pid) : 0;
	if (runs < 0) {
		snprintf(err, errlen, "--pid %d: its executable cannot be looked at, so whether --binary %s counts it "
		                      "too is unknown",
		         a->pid, b->binary);
		return 1;
	}
	if (runs || (!b->program && (m = shared_module(a, b)) != NULL)) {
		snprintf(err, errlen, "--pid %d maps %s, which --binary %s attaches to: it would count twice (name it once)",
		         a->pid, m ? m->path : b->binary, b->binary);
		return 1;
	}
	return 0;
}

size_t bx_binary_target_count(const bx_targets_t *ts)
{
	size_t n = 0;
	for (size_t i = 0; i < ts->count; i++)
		n += ts->items[i].binary != NULL;
	return n;
}

typedef struct maps_binary {
	const bx_targets_t *ts;
	int found; /* the index of a --binary library the process maps */
} maps_binary_t;

static int mapping_of_binary(unsigned long long dev, unsigned long long ino, const char *path, void *ctx)
{
	maps_binary_t *m = ctx;
	(void)path;
	for (size_t i = 0; i < m->ts->count; i++) {
		const bx_target_t *t = &m->ts->items[i];
		if (t->binary && !t->program && bx_target_has_file(t, dev, ino)) {
			m->found = (int)i;
			return 1;
		}
	}
	return 0;
}

int bx_binary_target_of(const bx_targets_t *ts, pid_t pid)
{
	int libraries = 0;
	for (size_t i = 0; i < ts->count; i++) {
		const bx_target_t *t = &ts->items[i];
		libraries += t->binary && !t->program;
		int runs = t->program ? bx_program_target_runs(t, pid) : 0;
		if (runs != 0)
			return runs > 0 ? (int)i : -2;
	}
	maps_binary_t m = { ts, -1 };
	if (libraries && pr_proc_each_mapping(pid, mapping_of_binary, &m) < 0)
		return -2;
	return m.found;
}

int bx_targets_check_overlap(const bx_targets_t *ts, char *err, size_t errlen)
{
	for (size_t i = 0; i < ts->count; i++) {
		const bx_target_t *a = &ts->items[i];
		for (size_t j = 0; j < ts->count; j++) {
			const bx_target_t *b = &ts->items[j];
			if (i == j || !b->binary || (a->binary && j < i))
				continue;
			if (a->binary ? binaries_overlap(a, b, err, errlen) : pid_overlaps(a, b, err, errlen))
				return -1;
		}
	}
	return 0;
}
