/*
 * cmd_list.c -- `billing-probes list TARGET`: every USDT probe of a file
 * or a process, like `dtrace -l` (-P provider, -n name glob).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "output.h"
#include "probes.h"

/* Probe names may be given as D spells them ("request-start"). */
static char *note_spelling(const char *pattern)
{
	size_t n = strlen(pattern), dashes = 0;
	for (size_t i = 0; i < n; i++)
		dashes += pattern[i] == '-';
	char *s = malloc(n + dashes + 1), *o = s;
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (pattern[i] == '-') {
			*o++ = '_';
			*o++ = '_';
		} else {
			*o++ = pattern[i];
		}
	}
	*o = '\0';
	return s;
}

int bp_cmd_list(const bp_options_t *opt)
{
	char err[512];
	bp_target_t t;
	if (bp_target_load(opt->target, &t, err, sizeof err) != 0) {
		bp_error(opt->target, err);
		bp_target_free(&t);
		return BP_EXIT_ERROR;
	}
	if (t.probe_count == 0) {
		if (t.is_process)
			bp_error(opt->target, "no USDT probes in the executable or any mapped library");
		else if (t.module_count && t.modules[0].has_note_section)
			bp_error(opt->target, "empty .note.stapsdt section: no USDT probes");
		else
			bp_error(opt->target, "no USDT probes (no .note.stapsdt section: built without probes, or stripped?)");
		bp_target_free(&t);
		return BP_EXIT_ERROR;
	}

	char *name_glob = opt->name_glob ? note_spelling(opt->name_glob) : NULL;
	unsigned char *selected = calloc(t.probe_count, 1);
	if (!selected || (opt->name_glob && !name_glob)) {
		bp_error(opt->target, "out of memory");
		free(selected);
		free(name_glob);
		bp_target_free(&t);
		return BP_EXIT_ERROR;
	}
	size_t matches = 0;
	for (size_t i = 0; i < t.probe_count; i++) {
		const bp_probe_t *p = &t.probes[i];
		if (opt->provider_glob && fnmatch(opt->provider_glob, p->provider, 0) != 0)
			continue;
		if (name_glob && fnmatch(name_glob, p->name, 0) != 0)
			continue;
		selected[i] = 1;
		matches++;
	}
	int rc = BP_EXIT_OK;
	if (matches == 0) {
		char why[512];
		snprintf(why, sizeof why, "no probe matches%s%s%s%s", opt->provider_glob ? " -P " : "",
		         opt->provider_glob ? opt->provider_glob : "", opt->name_glob ? " -n " : "",
		         opt->name_glob ? opt->name_glob : "");
		bp_error(opt->target, why);
		rc = BP_EXIT_FAIL;
	} else if (opt->json) {
		bp_print_json(stdout, &t, selected);
	} else {
		bp_print_table(stdout, &t, selected);
	}
	free(selected);
	free(name_glob);
	bp_target_free(&t);
	return rc;
}
