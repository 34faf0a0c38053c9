/*
 * check.h -- comparing a target with a catalogue; shared by check and
 * doctor.
 */
#ifndef BP_CHECK_H
#define BP_CHECK_H

#include <stdio.h>

#include "catalogue_d.h"
#include "probes.h"

/* Count missing and mismatched probes over targets taken as one program;
 * one line each to report (or nothing when report is NULL). */
size_t bp_check_compare(const bp_catalogue_t *cat, const bp_target_t *targets, size_t ntargets, FILE *report);

/* Load a .d file, or print the one error line and return -1. */
int bp_load_catalogue_or_report(const char *path, bp_catalogue_t *cat);

#endif /* BP_CHECK_H */
