/*
 * cmd_check.c -- `billing-probes check TARGET [--provider FILE.d]`: does
 * TARGET carry every probe the catalogue declares, each with the declared
 * number of arguments?  The question a service's CI asks after linking.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalogue_d.h"
#include "check.h"
#include "cli.h"
#include "probes.h"

size_t bp_check_compare(const bp_catalogue_t *cat, const bp_target_t *targets, size_t ntargets, FILE *report)
{
	size_t problems = 0;
	for (size_t c = 0; c < cat->count; c++) {
		const bp_catalogue_probe_t *want = &cat->probes[c];
		size_t sites = 0;
		for (size_t k = 0; k < ntargets; k++) {
			const bp_target_t *t = &targets[k];
			for (size_t i = 0; i < t->probe_count; i++) {
				const bp_probe_t *p = &t->probes[i];
				if (strcmp(p->provider, want->provider) != 0 || strcmp(p->name, want->name) != 0)
					continue;
				sites++;
				if (p->nargs == want->nargs)
					continue;
				problems++;
				if (report)
					fprintf(report, "mismatch: %s:%s at 0x%" PRIx64 " in %s has %d argument%s, the catalogue declares %d\n",
					        want->provider, want->name, p->address, t->modules[p->module].path,
					        p->nargs, p->nargs == 1 ? "" : "s", want->nargs);
			}
		}
		if (sites == 0) {
			problems++;
			if (report)
				fprintf(report, "missing: %s:%s (%d argument%s)\n", want->provider, want->name,
				        want->nargs, want->nargs == 1 ? "" : "s");
		}
	}
	return problems;
}

int bp_load_catalogue_or_report(const char *path, bp_catalogue_t *cat)
{
	char err[512];
	if (bp_catalogue_load(path, cat, err, sizeof err) != 0) {
		char why[600];
		snprintf(why, sizeof why, "bad provider file: %s", err);
		bp_error(path, why);
		return -1;
	}
	return 0;
}

int bp_cmd_check(const bp_options_t *opt)
{
	const char *d_file = opt->provider_file ? opt->provider_file : bp_default_provider_file();
	bp_catalogue_t cat;
	if (bp_load_catalogue_or_report(d_file, &cat) != 0)
		return BP_EXIT_ERROR;

	size_t ntargets = 1 + (size_t)opt->extra_target_count;
	bp_target_t *targets = calloc(ntargets, sizeof *targets);
	if (!targets) {
		bp_error(opt->target, "out of memory");
		bp_catalogue_free(&cat);
		return BP_EXIT_ERROR;
	}
	int rc = BP_EXIT_OK;
	for (size_t k = 0; k < ntargets && rc == BP_EXIT_OK; k++) {
		const char *spec = k == 0 ? opt->target : opt->extra_targets[k - 1];
		char err[512];
		if (bp_target_load(spec, &targets[k], err, sizeof err) != 0) {
			bp_error(spec, err);
			rc = BP_EXIT_ERROR;
		}
	}
	if (rc == BP_EXIT_OK) {
		char what[600];
		snprintf(what, sizeof what, "%s%s", opt->target, ntargets > 1 ? " (and the other targets)" : "");
		size_t problems = bp_check_compare(&cat, targets, ntargets, stdout);
		if (problems == 0) {
			printf("%s: ok: all %zu probes of %s present with their arguments\n", what, cat.count, d_file);
		} else {
			int any_notes = 0;
			for (size_t k = 0; k < ntargets; k++)
				for (size_t i = 0; i < targets[k].module_count; i++)
					any_notes |= targets[k].modules[i].has_note_section;
			printf("%s: %zu problem%s against %s%s\n", what, problems, problems == 1 ? "" : "s", d_file,
			       any_notes ? "" : " (no .note.stapsdt at all: built without probes, with LTO, or stripped?)");
			rc = BP_EXIT_FAIL;
		}
	}
	for (size_t k = 0; k < ntargets; k++)
		bp_target_free(&targets[k]);
	free(targets);
	bp_catalogue_free(&cat);
	return rc;
}
