/*
 * probe_set.h -- growing a probe set: the container the readers fill.
 * Private to the probe reader library (the public API is probe_reader.h).
 */
#ifndef BP_PROBE_SET_H
#define BP_PROBE_SET_H

#include <stddef.h>

#include "probe_reader.h"

/* Append a module; returns its index or (size_t)-1 when out of memory. */
size_t bp_probe_set_add_module(bp_probe_set_t *set, const char *path);
/* Append an empty probe; returns it or NULL when out of memory. */
bp_probe_t *bp_probe_set_add_probe(bp_probe_set_t *set);
/* Note a module that could not be read: "PATH: WHY".  0, or -1 when out
 * of memory. */
int bp_probe_set_add_unreadable(bp_probe_set_t *set, const char *path, const char *why);
/* Drop the probes from index count on (what a broken file yielded). */
void bp_probe_set_truncate(bp_probe_set_t *set, size_t count);

#endif /* BP_PROBE_SET_H */
