/*
 * cmd_check.c -- `billing-probes check TARGET... [--expect NAME]...`: does
 * the program carry the probes it promises (default: every probe of the
 * catalogue), each with the declared arguments?  The question a service's
 * CI asks after linking.  Text for people, --json for CI to keep.
 *
 * A program is its file and the shared libraries it loads: a service
 * built against libbillingprobes.so carries the timing helpers' probes
 * in the library.  So a file TARGET's DT_NEEDED libraries are found as
 * the dynamic loader finds them (needed_libs.c) and judged with it; one
 * that cannot be found refuses the answer (exit 2), since its probes
 * would be missing from it.  A PID's libraries are those it maps.
 * --save-baseline and --baseline judge the same program against a file
 * of an earlier build instead of the catalogue (check_baseline.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_baseline.h"
#include "check_modules.h"
#include "cli.h"
#include "commands.h"
#include "expect.h"
#include "output.h"
#include "term_text.h"

static const char *plural(int n)
{
	return n == 1 ? "" : "s";
}

static void print_finding(FILE *out, const bp_finding_t *f)
{
	const char *module = f->site ? f->set->modules[f->site->module].path : "";
	uint64_t at = f->site ? f->site->address : 0;
	pr_printf_escaped(out, "%s: %s:%s", bp_finding_word(f->kind), f->provider, f->name);
	switch (f->kind) {
	case BP_MISSING:
		pr_printf_escaped(out, " (%d argument%s)", f->want, plural(f->want));
		break;
	case BP_ARG_COUNT:
		if (f->got < 0)
			pr_printf_escaped(out, " at 0x%" PRIx64 " in %s has more than %d arguments, the catalogue declares %d", at,
			                  module, PR_SDT_MAX_ARGS, f->want);
		else
			pr_printf_escaped(out, " at 0x%" PRIx64 " in %s has %d argument%s, the catalogue declares %d", at, module,
			                  f->got, plural(f->got), f->want);
		break;
	case BP_ARG_WIDTH:
		if (f->got == 0 && f->site && f->arg >= 1 && f->arg <= f->site->nargs)
			pr_printf_escaped(out, " at 0x%" PRIx64 " in %s: argument %d cannot be decoded (\"%s\"), the catalogue declares %d bytes",
			                  at, module, f->arg, f->site->args[f->arg - 1].location, f->want);
		else
			pr_printf_escaped(out, " at 0x%" PRIx64 " in %s: argument %d is %d bytes wide, the catalogue declares %d", at,
			                  module, f->arg, f->got, f->want);
		break;
	case BP_UNKNOWN:
		pr_printf_escaped(out, " at 0x%" PRIx64 " in %s: the catalogue declares no such probe", at, module);
		break;
	case BP_UNGUARDED:
		pr_printf_escaped(out, " at 0x%" PRIx64 " in %s has no semaphore: the BILLING_ macros guard every probe "
		                       "(was sys/sdt.h included before billing/probes.h?)",
		                  at, module);
		break;
	case BP_UNEXPECTED:
		pr_printf_escaped(out, " present, not expected");
		break;
	case BP_FINDING_KINDS:
		break;
	}
	fputc('\n', out);
}

static void print_json(FILE *out, const bp_options_t *opt, const char *source, const bp_check_report_t *r,
                       int any_notes, const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets)
{
	fputs("{\"targets\": [", out);
	for (int k = 0; k < opt->target_count; k++)
		bp_json_string(out, k ? ", " : "", opt->targets[k]);
	bp_json_string(out, "], \"catalogue\": ", source);
	fprintf(out, ", \"ok\": %s, \"problems\": %zu, \"expected\": %zu, \"expected_found\": %zu, "
	             "\"stapsdt_notes\": %s, \"findings\": [",
	        r->problems ? "false" : "true", r->problems, r->expected, r->expected_found, any_notes ? "true" : "false");
	for (size_t i = 0; i < r->count; i++) {
		const bp_finding_t *f = &r->items[i];
		static const char *const kinds[BP_FINDING_KINDS] = { "missing", "argument-count", "argument-width",
			                                             "unknown", "unguarded", "unexpected" };
		bp_json_string(out, i ? ",\n  {\"kind\": " : "\n  {\"kind\": ", kinds[f->kind]);
		fprintf(out, ", \"problem\": %s", f->kind == BP_UNEXPECTED ? "false" : "true");
		bp_json_string(out, ", \"provider\": ", f->provider);
		bp_json_string(out, ", \"name\": ", f->name);
		if (f->site) {
			bp_json_string(out, ", \"module\": ", f->set->modules[f->site->module].path);
			fprintf(out, ", \"address\": \"0x%" PRIx64 "\"", f->site->address);
		}
		if (f->kind == BP_ARG_WIDTH)
			fprintf(out, ", \"argument\": %d", f->arg);
		if (f->kind == BP_ARG_COUNT || f->kind == BP_ARG_WIDTH)
			fprintf(out, ", \"declared\": %d, \"found\": %d", f->want, f->got);
		else if (f->kind == BP_MISSING)
			fprintf(out, ", \"declared\": %d", f->want);
		fputc('}', out);
	}
	fputs(r->count ? "\n], " : "], ", out);
	bp_json_probe_modules(out, cat, sets, nsets);
	fputs("}\n", out);
}

int bp_cmd_check(const bp_options_t *opt)
{
	const char *source;
	pr_catalogue_t cat;
	if (bp_cli_catalogue(opt, &cat, &source) != 0)
		return BP_EXIT_ERROR;
	bp_expect_t expect;
	char err[600];
	if (bp_expect_build(opt->expect, (size_t)opt->expect_count, opt->expect_file, &cat, &expect, err,
	                    sizeof err) != 0) {
		bp_error(opt->expect_file && !opt->expect_count ? "--expect-file" : "--expect", err);
		bp_expect_free(&expect);
		pr_catalogue_free(&cat);
		return BP_EXIT_ERROR;
	}

	/* the TARGETs, and one more set: the libraries they load */
	size_t nsets = (size_t)opt->target_count;
	pr_probe_set_t *sets = calloc(nsets + 1, sizeof *sets);
	int rc = sets ? BP_EXIT_OK : BP_EXIT_ERROR;
	if (!sets)
		bp_error(opt->targets[0], "out of memory");
	for (size_t k = 0; sets && k < nsets && rc == BP_EXIT_OK; k++)
		if (bp_cli_load_target(opt->targets[k], &sets[k]) != 0)
			rc = BP_EXIT_ERROR;

	if (rc == BP_EXIT_OK && bp_cli_load_needed(sets, nsets, &sets[nsets]) != 0)
		rc = BP_EXIT_ERROR;

	/* the baseline modes judge against a file, not the catalogue */
	int baseline = opt->baseline_file || opt->save_baseline_file;
	if (rc == BP_EXIT_OK && baseline)
		rc = bp_check_baseline(opt, &cat, sets, nsets + 1);

	bp_check_report_t report;
	memset(&report, 0, sizeof report);
	if (rc == BP_EXIT_OK && !baseline && bp_check_run(&cat, &expect, sets, nsets + 1, &report) != 0) {
		bp_error(opt->targets[0], "out of memory");
		rc = BP_EXIT_ERROR;
	}
	if (rc == BP_EXIT_OK && !baseline) {
		int any_notes = 0;
		for (size_t k = 0; k < nsets; k++)
			for (size_t i = 0; i < sets[k].module_count; i++)
				any_notes |= sets[k].modules[i].has_note_section;
		char what[600];
		snprintf(what, sizeof what, "%s%s", opt->targets[0], nsets > 1 ? " (and the other targets)" : "");
		if (opt->json) {
			print_json(stdout, opt, source, &report, any_notes, &cat, sets, nsets + 1);
		} else {
			bp_print_probe_modules(stdout, &cat, sets, nsets + 1);
			for (size_t i = 0; i < report.count; i++)
				print_finding(stdout, &report.items[i]);
			size_t unexpected = report.count - report.problems;
			if (report.problems == 0 && expect.count == 0)
				pr_printf_escaped(stdout, "%s: ok: all %zu probes of %s present with their arguments", what, cat.count, source);
			else if (report.problems == 0)
				pr_printf_escaped(stdout, "%s: ok: the %zu expected probe%s of %s present with their arguments (%zu more present, not expected)",
				                  what, report.expected, report.expected == 1 ? "" : "s", source, unexpected);
			else
				pr_printf_escaped(stdout, "%s: %zu problem%s against %s%s", what, report.problems, report.problems == 1 ? "" : "s",
				                  source, any_notes ? "" : " (no .note.stapsdt at all: built without probes, with LTO, or stripped?)");
			putchar('\n');
		}
		rc = report.problems ? BP_EXIT_FAIL : BP_EXIT_OK;
	}
	bp_check_report_free(&report);
	for (size_t k = 0; sets && k <= nsets; k++)
		pr_probe_set_free(&sets[k]);
	free(sets);
	bp_expect_free(&expect);
	pr_catalogue_free(&cat);
	return rc;
}
