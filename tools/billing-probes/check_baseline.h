/*
 * check_baseline.h -- `check --save-baseline FILE` and `check --baseline
 * FILE`: the probe contract of a build written down, and a later build
 * held to it.  cmd_check.c loads the program; this file answers.
 */
#ifndef BP_CHECK_BASELINE_H
#define BP_CHECK_BASELINE_H

#include <stddef.h>

#include "cli.h"

/* opt->save_baseline_file or opt->baseline_file, for the program made of
 * sets[0..nsets) (the TARGETs and the libraries they load), the
 * catalogue's providers only.  The exit status: 0 saved, or nothing
 * removed or changed; 1 a probe removed or changed; 2 after one line on
 * stderr (a baseline file that is not one, a file that cannot be
 * written, a build whose probes cannot be written truly). */
int bp_check_baseline(const bp_options_t *opt, const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets);

#endif /* BP_CHECK_BASELINE_H */
