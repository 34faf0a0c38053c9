/*
 * output.h -- the listing of probes, as a table for people and as JSON
 * for programs.
 */
#ifndef BP_OUTPUT_H
#define BP_OUTPUT_H

#include <stdio.h>

#include "probe_reader.h"

/* Print the probes of t whose index has selected[i] set. */
void bp_print_table(FILE *out, const pr_probe_set_t *t, const unsigned char *selected);
void bp_print_json(FILE *out, const pr_probe_set_t *t, const unsigned char *selected);

/* before, then s as a JSON string literal, quotes included (NULL: null);
 * control bytes and non-ASCII bytes escaped so the output is valid
 * whatever the ELF held. */
void bp_json_string(FILE *out, const char *before, const char *s);

#endif /* BP_OUTPUT_H */
