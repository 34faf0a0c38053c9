/*
 * cmd_doctor.c -- `billing-probes doctor [-p PID | --target FILE]`: can
 * this host trace the billing probes, and how to fix what is missing.
 * One line per check: OK, WARN or FAIL, the finding, and the fix.
 * Exit 1 on any FAIL.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalogue_d.h"
#include "check.h"
#include "cli.h"
#include "doctor_checks.h"
#include "probes.h"
#include "proc_maps.h"

static const char *status_word(bp_status_t s)
{
	return s == BP_OK ? "OK  " : s == BP_WARN ? "WARN" : "FAIL";
}

static void print_result(const bp_check_result_t *r)
{
	printf("%s  %s: %s", status_word(r->status), r->name, r->finding);
	if (r->status != BP_OK && r->fix[0])
		printf(" (fix: %s)", r->fix);
	putchar('\n');
}

/* What the instruction at a probe site is.  In a file: the nop the
 * compiler left.  In a live process: int3 (0xcc) while a uprobe traps
 * there, call/jmp once the kernel optimized it. */
typedef enum { SITE_NOP1, SITE_NOP5, SITE_INT3, SITE_OPTIMIZED, SITE_OTHER, SITE_UNREADABLE, SITE_KINDS } site_kind_t;

static const char *const site_words[SITE_KINDS] = {
	"1-byte nop", "5-byte nop", "int3 (uprobe attached, trapping)",
	"call/jmp (optimized uprobe attached)", "unexpected instruction", "unreadable",
};

static site_kind_t classify_site(const unsigned char b[5])
{
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	if (b[0] == 0x90)
		return SITE_NOP1;
	if (memcmp(b, nop5, 5) == 0)
		return SITE_NOP5;
	if (b[0] == 0xcc)
		return SITE_INT3;
	if (b[0] == 0xe8 || b[0] == 0xe9)
		return SITE_OPTIMIZED;
	return SITE_OTHER;
}

static int in_catalogue(const bp_catalogue_t *cat, const bp_probe_t *p)
{
	for (size_t i = 0; i < cat->count; i++)
		if (strcmp(cat->probes[i].provider, p->provider) == 0 && strcmp(cat->probes[i].name, p->name) == 0)
			return 1;
	return 0;
}

static void sites_result(const bp_catalogue_t *cat, const bp_target_t *t, bp_check_result_t *r)
{
	size_t counts[SITE_KINDS] = { 0 };
	int fd = t->is_process ? -1 : open(t->spec, O_RDONLY | O_CLOEXEC);
	size_t total = 0;
	for (size_t i = 0; i < t->probe_count; i++) {
		const bp_probe_t *p = &t->probes[i];
		if (!in_catalogue(cat, p))
			continue;
		unsigned char b[5];
		int ok;
		if (t->is_process)
			ok = p->runtime_address && bp_proc_read_memory(t->pid, p->runtime_address, b, 5) == 0;
		else
			ok = fd >= 0 && p->address_offset >= 0 && pread(fd, b, 5, (off_t)p->address_offset) == 5;
		counts[ok ? classify_site(b) : SITE_UNREADABLE]++;
		total++;
	}
	if (fd >= 0)
		close(fd);
	size_t used = 0;
	for (int k = 0; k < SITE_KINDS; k++) {
		if (!counts[k] || used >= sizeof r->finding)
			continue;
		used += (size_t)snprintf(r->finding + used, sizeof r->finding - used, "%s%zu x %s", used ? ", " : "",
		                         counts[k], site_words[k]);
	}
	r->name = "probe sites";
	r->status = (counts[SITE_OTHER] || counts[SITE_UNREADABLE]) ? BP_WARN : BP_OK;
	r->fix[0] = '\0';
	if (total == 0)
		snprintf(r->finding, sizeof r->finding, "none");
}

/* The "carries the billing probes" check.  Returns -1 when the target
 * or the provider file could not be read at all (exit 2). */
static int target_results(const bp_options_t *opt, bp_check_result_t *carries, bp_check_result_t *sites)
{
	const char *spec = opt->doctor_pid ? opt->doctor_pid : opt->doctor_target;
	const char *d_file = opt->provider_file ? opt->provider_file : bp_default_provider_file();
	if (opt->doctor_pid) {
		for (const char *c = spec; *c; c++) {
			if (*c < '0' || *c > '9') {
				bp_error(spec, "-p needs a numeric PID");
				return -1;
			}
		}
	}
	bp_catalogue_t cat;
	if (bp_load_catalogue_or_report(d_file, &cat) != 0)
		return -1;
	char err[512];
	bp_target_t t;
	if (bp_target_load(spec, &t, err, sizeof err) != 0 || (opt->doctor_pid && !t.is_process)) {
		bp_error(spec, opt->doctor_pid && !t.is_process ? "not a PID" : err);
		bp_target_free(&t);
		bp_catalogue_free(&cat);
		return -1;
	}
	size_t problems = bp_check_compare(&cat, &t, 1, NULL);
	carries->name = "target";
	if (problems == 0) {
		size_t traced = 0;
		for (size_t i = 0; i < t.probe_count; i++)
			traced += t.probes[i].traced == 1 && in_catalogue(&cat, &t.probes[i]);
		if (t.is_process)
			snprintf(carries->finding, sizeof carries->finding,
			         "PID %d carries all %zu probes of %s; %zu site%s traced now", t.pid, cat.count, d_file,
			         traced, traced == 1 ? "" : "s");
		else
			snprintf(carries->finding, sizeof carries->finding, "%s carries all %zu probes of %s", spec,
			         cat.count, d_file);
		carries->status = BP_OK;
		carries->fix[0] = '\0';
	} else {
		snprintf(carries->finding, sizeof carries->finding, "%s lacks or mismatches %zu of the %zu probes of %s", spec,
		         problems, cat.count, d_file);
		snprintf(carries->fix, sizeof carries->fix,
		         "run `billing-probes check %s --provider %s` for the list; rebuild with probes (dtrace and sys/sdt.h: systemtap-sdt-dev), without LTO", spec,
		         d_file);
		carries->status = BP_FAIL;
	}
	sites_result(&cat, &t, sites);
	bp_target_free(&t);
	bp_catalogue_free(&cat);
	return 0;
}

int bp_cmd_doctor(const bp_options_t *opt)
{
	bp_check_result_t results[12];
	size_t n = 0;
	memset(results, 0, sizeof results);

	/* Read the target first: a bad -p/--target is a bad question (exit 2). */
	bp_check_result_t carries, sites;
	memset(&carries, 0, sizeof carries);
	memset(&sites, 0, sizeof sites);
	int have_target = opt->doctor_pid || opt->doctor_target;
	if (have_target && target_results(opt, &carries, &sites) != 0)
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
		tracer->status = BP_OK;
		snprintf(tracer->finding, sizeof tracer->finding, "%s can trace the probes",
		         bpftrace_ok && dtrace_ok ? "bpftrace and DTrace" : bpftrace_ok ? "bpftrace" : "DTrace");
	} else {
		tracer->status = BP_FAIL;
		snprintf(tracer->finding, sizeof tracer->finding, "neither bpftrace nor a real DTrace is usable");
		snprintf(tracer->fix, sizeof tracer->fix, "apt-get install bpftrace");
	}
	bp_doctor_optimized_uprobes(&results[n++]);
	if (have_target) {
		results[n++] = carries;
		results[n++] = sites;
	}

	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		print_result(&results[i]);
		failed |= results[i].status == BP_FAIL;
	}
	return failed ? BP_EXIT_FAIL : BP_EXIT_OK;
}
