/*
 * target_overlap.c -- one process counted once: targets that would count
 * a fire twice are refused before anything is attached (target_overlap.h).
 * Above the targets and the stats source, whose targets it compares.
 */
#include "target_overlap.h"

#include <stdio.h>

#include "exporter.h"
#include "program_target.h"
#include "stats_source.h"
#include "targets.h"

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

int bx_targets_check_overlap(const bx_exporter_t *ex, char *err, size_t errlen)
{
	for (size_t i = 0; i < ex->target_count; i++) {
		const bx_target_t *a = &ex->targets[i];
		for (size_t j = 0; j < ex->target_count; j++) {
			const bx_target_t *b = &ex->targets[j];
			if (i == j || !b->binary || (a->binary && j < i))
				continue;
			if (a->binary ? binaries_overlap(a, b, err, errlen) : pid_overlaps(a, b, err, errlen))
				return -1;
		}
	}
	for (size_t i = 0; i < bx_stats_target_count(ex); i++) {
		int pid = bx_stats_target_pid(ex, i), b = pid > 0 && bx_binary_target_count(ex) ? bx_binary_target_of(ex, pid) : -1;
		if (b == -1)
			continue;
		if (b >= 0)
			snprintf(err, errlen, "--pid %d maps a file --binary %s attaches to: its fires would count twice, from "
			                      "its stats segment and through USDT (name it once)",
			         pid, ex->targets[b].binary);
		else
			snprintf(err, errlen, "--pid %d: its executable or memory maps cannot be read, so whether --binary "
			                      "counts it too is unknown (run as root or as its user)",
			         pid);
		return -1;
	}
	return 0;
}
