/*
 * cmd_list.c -- `billing-probes list TARGET`: every USDT probe of a file
 * or a process, like `dtrace -l` (-P provider, -n name glob; --provider
 * FILE.d keeps the probes that file declares).
 *
 * A file's listing holds the probes of the shared libraries it loads too,
 * found as the dynamic loader finds them (needed_libs.c): a service built
 * against libbillingprobes.so carries the timing helpers' probes there,
 * and a process of it lists them all.  A library the loader would not
 * find is one line naming it and where it was looked for; the listing is
 * then partial, and the exit status says so.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "output.h"

static void report_no_probes(const pr_probe_set_t *t)
{
	if (t->is_process)
		bp_error(t->spec, "no USDT probes in the executable or any mapped library");
	else if (t->module_count && t->modules[0].has_note_section)
		bp_error(t->spec, "empty .note.stapsdt section: no USDT probes, nor in the libraries it loads");
	else
		bp_error(t->spec, "no USDT probes (no .note.stapsdt section: built without probes, or stripped?), nor in the "
		                  "libraries it loads");
}

/* The libraries file target t loads, with their probes, into t; each one
 * that cannot be read or found said in one line.  0, or -1 when the
 * listing is partial. */
static int add_libraries(pr_probe_set_t *t)
{
	pr_probe_set_t needed;
	char err[600], what[700];
	if (pr_probe_set_load_needed(t, 1, &needed, err, sizeof err) != 0) {
		snprintf(what, sizeof what, "the libraries it loads: %s", err);
		bp_error(t->spec, what);
		pr_probe_set_free(&needed);
		return -1;
	}
	int rc = 0;
	if (pr_probe_set_merge(t, &needed) != 0) {
		bp_error(t->spec, "out of memory");
		rc = -1;
	}
	for (size_t i = 0; i < needed.missing_count; i++) {
		const pr_missing_library_t *m = &needed.missing[i];
		snprintf(what, sizeof what, "%s (needed by %s)", m->name, m->needed_by);
		snprintf(err, sizeof err, "%s: its probes are not listed (set LD_LIBRARY_PATH as the service runs, or "
		                          "list the library itself)",
		         m->why);
		bp_error(what, err);
		rc = -1;
	}
	for (size_t i = 0; i < needed.unreadable_count; i++) {
		bp_error("a library it loads", needed.unreadable[i]);
		rc = -1;
	}
	pr_probe_set_free(&needed);
	return rc;
}

int bp_cmd_list(const bp_options_t *opt)
{
	const char *target = opt->targets[0];
	pr_catalogue_t cat;
	const char *source = NULL;
	memset(&cat, 0, sizeof cat);
	if (opt->provider_file && bp_cli_catalogue(opt, &cat, &source) != 0)
		return BP_EXIT_ERROR;
	pr_probe_set_t t;
	if (bp_cli_load_target(target, &t) != 0) {
		pr_probe_set_free(&t);
		pr_catalogue_free(&cat);
		return BP_EXIT_ERROR;
	}
	/* A library the file loads is listed for the catalogue's probes it
	 * holds (libbillingprobes' sites): another provider's there, such as
	 * libstdc++'s that a sanitizer runtime loads, is that library's, listed
	 * by naming it. */
	size_t own = t.module_count, listable = 0;
	pr_catalogue_t builtin;
	memset(&builtin, 0, sizeof builtin);
	const pr_catalogue_t *known = opt->provider_file ? &cat : &builtin;
	int partial = !t.is_process && add_libraries(&t) != 0;
	if (!opt->provider_file && pr_catalogue_builtin(&builtin) != 0) {
		bp_error(target, "out of memory");
		partial = 1;
	}
	for (size_t i = 0; i < t.probe_count; i++)
		listable += t.probes[i].module < own || pr_catalogue_find(known, t.probes[i].provider, t.probes[i].name);
	if (listable == 0) {
		if (t.unreadable_count == 0 && !partial)
			report_no_probes(&t);
		pr_probe_set_free(&t);
		pr_catalogue_free(&cat);
		pr_catalogue_free(&builtin);
		return BP_EXIT_ERROR;
	}

	size_t cap = opt->name_glob ? 2 * strlen(opt->name_glob) + 1 : 1;
	char *name_glob = malloc(cap);
	unsigned char *selected = calloc(t.probe_count, 1);
	int rc = BP_EXIT_OK;
	if (!selected || !name_glob || (opt->name_glob && !pr_probe_name_to_elf(opt->name_glob, name_glob, cap))) {
		bp_error(target, "out of memory");
		rc = BP_EXIT_ERROR;
	}
	size_t matches = 0;
	for (size_t i = 0; rc == BP_EXIT_OK && i < t.probe_count; i++) {
		const pr_probe_t *p = &t.probes[i];
		if (p->module >= own && !pr_catalogue_find(known, p->provider, p->name))
			continue;
		if (opt->provider_glob && fnmatch(opt->provider_glob, p->provider, 0) != 0)
			continue;
		if (opt->name_glob && fnmatch(name_glob, p->name, 0) != 0)
			continue;
		if (opt->provider_file && !pr_catalogue_find(&cat, p->provider, p->name))
			continue;
		selected[i] = 1;
		matches++;
	}
	if (rc != BP_EXIT_OK) {
		/* reported above */
	} else if (matches == 0) {
		char why[600];
		snprintf(why, sizeof why, "no probe matches%s%s%s%s%s%s", opt->provider_glob ? " -P " : "",
		         opt->provider_glob ? opt->provider_glob : "", opt->name_glob ? " -n " : "",
		         opt->name_glob ? opt->name_glob : "", source ? " --provider " : "", source ? source : "");
		bp_error(target, why);
		rc = BP_EXIT_FAIL;
	} else if (opt->json) {
		bp_print_json(stdout, &t, selected);
	} else {
		bp_print_table(stdout, &t, selected);
	}
	/* A module we could not read or find may hold probes: the listing is partial. */
	if (t.unreadable_count || partial)
		rc = BP_EXIT_ERROR;
	free(selected);
	free(name_glob);
	pr_probe_set_free(&t);
	pr_catalogue_free(&cat);
	pr_catalogue_free(&builtin);
	return rc;
}
