/*
 * check_modules.h -- which module carries each probe `check` found: the
 * program's own file, or a library it loads.  Text and JSON; check.c
 * judges, cmd_check.c prints the verdict.
 */
#ifndef BP_CHECK_MODULES_H
#define BP_CHECK_MODULES_H

#include <stddef.h>
#include <stdio.h>

#include "probe_reader.h"

/* "PROBE  MODULE" rows, one per catalogue probe and module carrying it,
 * in the catalogue's order; nothing when no module carries any. */
void bp_print_probe_modules(FILE *out, const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets);

/* JSON members (no braces): "present": [{provider, name, module}...],
 * "modules": [{path, needed, needed_by, probes}...]. */
void bp_json_probe_modules(FILE *out, const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets);

#endif /* BP_CHECK_MODULES_H */
