/*
 * probe_set.h -- growing a probe set: the container the readers fill.
 * Private to the probe reader library (the public API is probe_reader.h).
 */
#ifndef PR_PROBE_SET_H
#define PR_PROBE_SET_H

#include <stddef.h>

#include "probe_reader.h"

/* Append a module; returns its index or (size_t)-1 when out of memory. */
size_t pr_probe_set_add_module(pr_probe_set_t *set, const char *path);
/* Append an empty probe; returns it or NULL when out of memory. */
pr_probe_t *pr_probe_set_add_probe(pr_probe_set_t *set);
/* Note a module that could not be read: "PATH: WHY".  0, or -1 when out
 * of memory. */
int pr_probe_set_add_unreadable(pr_probe_set_t *set, const char *path, const char *why);
/* Drop the probes from index count on (what a broken file yielded). */
void pr_probe_set_truncate(pr_probe_set_t *set, size_t count);

#endif /* PR_PROBE_SET_H */
