/*
 * cmd_doctor.c -- `billing-probes doctor [TARGET] [--clear-stale]`: can
 * this host trace the billing probes, does TARGET carry them, and (for a
 * PID) is any semaphore raised with nobody listening.  One line per
 * check: OK, WARN or FAIL, the finding, and the fix.  Exit 1 on any FAIL.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"
#include "commands.h"
#include "doctor_result.h"
#include "host_checks.h"
#include "probe_sites.h"
#include "semaphore_guard.h"
#include "stale_semaphores.h"
#include "term_text.h"

static const char *status_word(bp_status_t s)
{
	return s == BP_OK ? "OK  " : s == BP_WARN ? "WARN"
	                                          : "FAIL";
}

/* Findings name targets, probes and tracer output: escaped. */
static void print_result(const bp_check_result_t *r)
{
	pr_printf_escaped(stdout, "%s  %s: %s", status_word(r->status), r->name, r->finding);
	if (r->status != BP_OK && r->fix[0])
		pr_printf_escaped(stdout, " (fix: %s)", r->fix);
	putchar('\n');
}

static void sites_result(const pr_catalogue_t *cat, const pr_probe_set_t *t, bp_check_result_t *r)
{
	size_t counts[BP_SITE_KINDS] = { 0 };
	int fd = t->is_process ? -1 : open(t->spec, O_RDONLY | O_CLOEXEC);
	size_t total = 0;
	for (size_t i = 0; i < t->probe_count; i++) {
		const pr_probe_t *p = &t->probes[i];
		if (!pr_catalogue_find(cat, p->provider, p->name))
			continue;
		counts[bp_site_read(t, p, fd)]++;
		total++;
	}
	if (fd >= 0)
		close(fd);
	size_t used = 0;
	for (int k = 0; k < BP_SITE_KINDS; k++) {
		if (!counts[k] || used >= sizeof r->finding)
			continue;
		used += (size_t)snprintf(r->finding + used, sizeof r->finding - used, "%s%zu x %s", used ? ", " : "",
		                         counts[k], bp_site_word((bp_site_kind_t)k));
	}
	r->name = "probe sites";
	r->status = (counts[BP_SITE_OTHER] || counts[BP_SITE_UNREADABLE]) ? BP_WARN : BP_OK;
	r->fix[0] = '\0';
	if (total == 0)
		snprintf(r->finding, sizeof r->finding, "none");
}

/* t: the target (with, for a file, the libraries it loads in t[1]). */
static void carries_result(const pr_catalogue_t *cat, const char *source, const pr_probe_set_t *t,
                           bp_check_result_t *r)
{
	bp_check_report_t report;
	r->name = "target";
	if (bp_check_run(cat, NULL, t, t->is_process ? 1 : 2, &report) != 0) {
		bp_result_set(r, BP_WARN, "out of memory", NULL);
		return;
	}
	if (report.problems == 0) {
		size_t traced = 0;
		for (size_t i = 0; i < t->probe_count; i++)
			traced += t->probes[i].traced == 1 && pr_catalogue_find(cat, t->probes[i].provider, t->probes[i].name);
		if (t->is_process)
			snprintf(r->finding, sizeof r->finding, "PID %d carries all %zu probes of %s; %zu site%s traced now",
			         t->pid, cat->count, source, traced, traced == 1 ? "" : "s");
		else
			snprintf(r->finding, sizeof r->finding, "%s carries all %zu probes of %s (with the libraries it loads)",
			         t->spec, cat->count, source);
		r->status = BP_OK;
		r->fix[0] = '\0';
	} else {
		snprintf(r->finding, sizeof r->finding, "%s lacks or mismatches %zu of the %zu probes of %s", t->spec,
		         report.problems, cat->count, source);
		snprintf(r->fix, sizeof r->fix,
		         "run `billing-probes check %s` for the list; rebuild with probes (dtrace and sys/sdt.h: "
		         "systemtap-sdt-dev), without LTO",
		         t->spec);
		r->status = BP_FAIL;
	}
	bp_check_report_free(&report);
}

/* Semaphores raised with no uprobe at their sites; cleared on request. */
static void semaphores_result(const pr_probe_set_t *t, int clear, bp_check_result_t *r)
{
	bp_semaphore_survey_t survey;
	r->name = "semaphores";
	r->fix[0] = '\0';
	if (bp_semaphores_survey(t, &survey) != 0) {
		bp_result_set(r, BP_WARN, "cannot read the process's semaphores or probe sites",
		              "run doctor as root or as the process's user");
		return;
	}
	if (survey.stale == 0) {
		if (survey.count == 0)
			snprintf(r->finding, sizeof r->finding, "0 raised (nothing traced); none stale");
		else
			snprintf(r->finding, sizeof r->finding, "%zu raised, each with a uprobe at its sites; none stale",
			         survey.count);
		r->status = BP_OK;
		bp_semaphores_free(&survey);
		return;
	}
	size_t used = 0, cleared = 0, refused = 0, alien = 0;
	char names[400] = "", why[300];
	for (size_t k = 0; k < survey.count; k++) {
		const bp_semaphore_t *s = &survey.items[k];
		if (!bp_semaphore_is_stale(s))
			continue;
		/* a counter a note places outside its module's semaphore section
		 * is never written, nor offered for --clear-stale */
		int rc = bp_semaphore_guard(t, s->probe, why, sizeof why) != 0 ? -2 : 0;
		if (rc == 0 && clear)
			rc = bp_semaphore_clear(t, s, why, sizeof why);
		if (rc == -2) {
			char what[64];
			snprintf(what, sizeof what, "doctor: PID %d", t->pid);
			pr_printf_escaped(stderr, "billing-probes: %s: left alone %s:%s at 0x%" PRIx64 " in %s: %s", what,
			                  s->probe->provider, s->probe->name, s->address, t->modules[s->probe->module].path, why);
			fputc('\n', stderr);
			alien++;
			continue;
		}
		cleared += rc == 1;
		refused += rc < 0;
		if (used < sizeof names)
			used += (size_t)snprintf(names + used, sizeof names - used, "%s%s:%s = %u at 0x%" PRIx64,
			                         used ? ", " : "", s->probe->provider, s->probe->name, s->value, s->address);
	}
	size_t stale = survey.stale - alien;
	char alien_text[200] = "";
	if (alien)
		snprintf(alien_text, sizeof alien_text, "%s%zu counter%s left alone: not in its module's semaphore section "
		                                        "(notes of a broken or hostile ELF; one line each above)",
		         stale ? "; " : "", alien, alien == 1 ? "" : "s");
	if (stale == 0) {
		snprintf(r->finding, sizeof r->finding, "%s", alien_text);
		snprintf(r->fix, sizeof r->fix, "find who built the module those notes come from");
		r->status = BP_FAIL;
	} else if (clear && refused == 0) {
		snprintf(r->finding, sizeof r->finding, "cleared %zu of %zu stale semaphore%s (%s)%s", cleared, stale,
		         stale == 1 ? "" : "s", names, alien_text);
		r->status = alien ? BP_FAIL : BP_OK;
		if (alien)
			snprintf(r->fix, sizeof r->fix, "find who built the module those notes come from");
	} else {
		snprintf(r->finding, sizeof r->finding,
		         "%zu stale: raised with no uprobe at any site they guard (%s); every guarded argument is "
		         "evaluated on every call%s",
		         stale, names, alien_text);
		snprintf(r->fix, sizeof r->fix, "%s`billing-probes doctor %d --clear-stale` as root, or restart the "
		                                "process (a tracer killed with SIGKILL leaves them raised)",
		         refused ? "the write was refused: run " : "", t->pid);
		r->status = alien ? BP_FAIL : BP_WARN;
	}
	bp_semaphores_free(&survey);
}

/* The target's lines.  Returns -1 when the target or the provider file
 * could not be read at all (exit 2). */
static int target_results(const bp_options_t *opt, bp_check_result_t *out, size_t *n)
{
	const char *source;
	pr_catalogue_t cat;
	if (bp_cli_catalogue(opt, &cat, &source) != 0)
		return -1;
	/* the target, and for a file the libraries it loads (as check) */
	pr_probe_set_t t[2];
	memset(t, 0, sizeof t);
	int rc = bp_cli_load_target(opt->targets[0], &t[0]);
	if (rc == 0 && !t[0].is_process)
		rc = bp_cli_load_needed(&t[0], 1, &t[1]);
	if (rc == 0) {
		carries_result(&cat, source, t, &out[(*n)++]);
		sites_result(&cat, &t[0], &out[(*n)++]);
		if (t[0].is_process)
			semaphores_result(&t[0], opt->clear_stale, &out[(*n)++]);
	}
	pr_probe_set_free(&t[0]);
	pr_probe_set_free(&t[1]);
	pr_catalogue_free(&cat);
	return rc;
}

int bp_cmd_doctor(const bp_options_t *opt)
{
	bp_check_result_t results[16], target[3];
	size_t n = 0, ntarget = 0;
	memset(results, 0, sizeof results);
	memset(target, 0, sizeof target);

	if (opt->clear_stale && opt->target_count == 0)
		return bp_usage_error("doctor: --clear-stale needs a PID");
	/* Read the target first: a bad TARGET is a bad question (exit 2). */
	if (opt->target_count && target_results(opt, target, &ntarget) != 0)
		return BP_EXIT_ERROR;

	bp_doctor_kernel(&results[n++]);
	bp_doctor_kernel_uprobes(&results[n++]);
	bp_doctor_kernel_bpf(&results[n++]);
	bp_doctor_tracefs(&results[n++]);
	bp_doctor_privileges(&results[n++]);
	bp_doctor_perf_event_paranoid(&results[n++]);
	int bpftrace_ok, dtrace_ok;
	bp_doctor_bpftrace(&results[n++], &bpftrace_ok);
	bp_doctor_dtrace(&results[n++], &dtrace_ok);
	bp_check_result_t *tracer = &results[n++];
	tracer->name = "tracer";
	if (bpftrace_ok || dtrace_ok) {
		char msg[128];
		snprintf(msg, sizeof msg, "%s can trace the probes",
		         bpftrace_ok && dtrace_ok ? "bpftrace and DTrace" : bpftrace_ok ? "bpftrace"
		                                                                        : "DTrace");
		bp_result_set(tracer, BP_OK, msg, NULL);
	} else {
		bp_result_set(tracer, BP_FAIL, "neither bpftrace nor a real DTrace is usable", "apt-get install bpftrace");
	}
	bp_doctor_optimized_uprobes(&results[n++]);
	for (size_t i = 0; i < ntarget; i++)
		results[n++] = target[i];

	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		print_result(&results[i]);
		failed |= results[i].status == BP_FAIL;
	}
	return failed ? BP_EXIT_FAIL : BP_EXIT_OK;
}
