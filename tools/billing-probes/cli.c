/*
 * cli.c -- options shared by every command, error lines, and the
 * catalogue a command compares against.
 *
 * TARGET means the same to all but trace: an ELF file or a PID, positionally,
 * or -p PID / --target FILE.  --provider FILE.d means the same to
 * list, check and doctor: the catalogue, replacing the one compiled in.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "option_table.h"
#include "term_text.h"

const char bp_cli_help[] =
    "TARGET is an ELF executable or shared library, or the PID of a running\n"
    "process (its executable and every mapped library); -p PID and --target\n"
    "FILE say the same.  check (and doctor) judge a file TARGET with the\n"
    "shared libraries it loads, found as the dynamic loader finds them\n"
    "(its RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache); one not found is\n"
    "exit 2.  check with several TARGETs checks them as one program (a\n"
    "service and a library it opens with dlopen).\n"
    "--provider FILE.d replaces the catalogue built in (billing.d of version\n" BILLING_PROBES_VERSION "): list then shows only its providers' probes.\n"
    "Probe names (-n, --expect) match as written in ELF notes (request__start)\n"
    "or in D (request-start), and take globs.  --expect-file holds one name or\n"
    "glob per line, # comments.  Without --expect, check expects every probe.\n"
    "check --save-baseline FILE writes the probes the program carries (of the\n"
    "catalogue's providers: name, argument count and types) to FILE;\n"
    "check --baseline FILE compares the program with it: each probe removed or\n"
    "changed is a line and exit 1, each one added a line (exit 0).\n"
    "trace runs a bpftrace script (a shipped one by name, such as tps; a file\n"
    "of yours by a path with a /, owned by you or root and writable by no\n"
    "one else) resolved for the modules of the processes (several -p: one\n"
    "service, one total), or for every process running PATH, now or later\n"
    "(--binary, until Ctrl-C; several: a program and the libraries it\n"
    "loads, each probe attached where it lives).  A trace whose targets\n"
    "carry none of the script's probes is refused.  --dry-run prints the\n"
    "resolved script.\n"
    "$BPFTRACE, if set, must be an absolute path to a bpftrace owned likewise.\n"
    "doctor --clear-stale lowers semaphores raised with no uprobe attached,\n"
    "and writes only inside its module's semaphore section.\n"
    "top shows a process's stats segment (or a directory of them) per\n"
    "interval: business rates and per handler requests/s with the duration\n"
    "bucket p50/p95/p99 fall in; p or space pauses, q quits; --once prints one\n"
    "interval as plain text (exit 1: the process exited in it).\n"
    "slow prints the trails of slow requests a stats build keeps in its\n"
    "segment (request ID, handler, each probe with its offset and arguments);\n"
    "--follow prints new ones as they come until Ctrl-C, --interval apart;\n"
    "--id ID prints the trail of one request, as an exemplar names it.\n"
    "Exit status: 0 ok, 1 check/doctor found a problem or nothing matched,\n"
    "2 bad target, provider file or usage (trace: bpftrace's status).\n";

/* WHAT is often another user's text (a path, a name), and WHY may quote
 * some: both escaped (term_text.h). */
void bp_error(const char *what, const char *why)
{
	fflush(stdout);
	fputs("billing-probes: ", stderr);
	pr_put_escaped(stderr, what);
	fputs(": ", stderr);
	pr_put_escaped(stderr, why);
	fputc('\n', stderr);
}

int bp_usage_error(const char *why)
{
	fflush(stdout);
	fputs("billing-probes: ", stderr);
	pr_put_escaped(stderr, why);
	fputs(" (try billing-probes --help)\n", stderr);
	return BP_EXIT_ERROR;
}

static int parse_pid(const char *text, void *out, char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	if (text[0] == '\0')
		return -1;
	for (const char *c = text; *c; c++)
		if (*c < '0' || *c > '9')
			return -1;
	*(const char **)out = text;
	return 0;
}

/* What the command line sets; the table's values go here. */
static bp_options_t parsed;
static size_t target_n, expect_n, binary_n;

enum { EVERY = 0,
       NOT_TRACE = BP_LIST | BP_CHECK | BP_DOCTOR | BP_TOP | BP_SLOW };

/* Every option of every command, once: parsing, each command's --help
 * and docs/tool.md's tables come from here. */
static const opt_option_t options[] = {
	{ "", "PID", OPT_LIST, parsed.targets, .letter = 'p', .parse = parse_pid, .most = BP_MAX_TARGETS,
	  .count = &target_n, .wants = "a numeric PID",
	  .help = "a running process: its executable and every mapped library",
	  .doc = "a TARGET: a running process, its executable and every mapped library (`trace`: "
	         "several are one service)" },
	{ "target", "FILE", OPT_LIST, parsed.targets, .commands = NOT_TRACE, .most = BP_MAX_TARGETS,
	  .count = &target_n, .wants = "a file", .help = "a TARGET given by name: an ELF file or a PID" },
	{ NULL, "TARGET", OPT_LIST, parsed.targets, .commands = NOT_TRACE, .most = BP_MAX_TARGETS,
	  .count = &target_n },
	{ NULL, "SCRIPT", OPT_TEXT, &parsed.script, .commands = BP_TRACE, .wants = "a script" },
	{ "provider", "FILE.d", OPT_TEXT, &parsed.provider_file, .commands = BP_LIST | BP_CHECK | BP_DOCTOR,
	  .wants = "a .d file",
	  .help = "the catalogue, replacing the billing.d built in",
	  .doc = "the catalogue, replacing the billing.d built in: `check` and `doctor` compare against "
	         "it, `list` shows only the probes it declares" },
	{ "", "PROVIDER", OPT_TEXT, &parsed.provider_glob, .letter = 'P', .commands = BP_LIST,
	  .wants = "a provider name", .help = "only providers matching this glob" },
	{ "", "NAME", OPT_TEXT, &parsed.name_glob, .letter = 'n', .commands = BP_LIST,
	  .wants = "a probe name", .help = "only probes matching this glob (D or ELF spelling)" },
	{ "json", NULL, OPT_FLAG, &parsed.json, .commands = BP_LIST | BP_CHECK,
	  .help = "one JSON document on stdout" },
	{ "expect", "NAME", OPT_LIST, parsed.expect, .commands = BP_CHECK, .most = BP_MAX_EXPECT,
	  .count = &expect_n, .wants = "a probe name or glob",
	  .help = "expect this probe (a glob; repeatable; default: every probe)" },
	{ "expect-file", "FILE", OPT_TEXT, &parsed.expect_file, .commands = BP_CHECK, .wants = "a file",
	  .help = "expect the probes named in FILE, one name or glob a line, # comments" },
	{ "save-baseline", "FILE", OPT_TEXT, &parsed.save_baseline_file, .commands = BP_CHECK,
	  .wants = "a file", .help = "write the probes the program carries to FILE" },
	{ "baseline", "FILE", OPT_TEXT, &parsed.baseline_file, .commands = BP_CHECK, .wants = "a file",
	  .help = "compare the program with FILE: a probe removed or changed is exit 1" },
	{ "clear-stale", NULL, OPT_FLAG, &parsed.clear_stale, .commands = BP_DOCTOR,
	  .help = "lower the semaphores raised with no uprobe attached (needs a PID)" },
	{ "binary", "PATH", OPT_LIST, parsed.binaries, .commands = BP_TRACE, .most = BP_MAX_TARGETS,
	  .count = &binary_n, .wants = "the path of a program or library",
	  .help = "every process running PATH, now or later (repeatable)" },
	{ "", "'CMD ARGS'", OPT_TEXT, &parsed.command_line, .letter = 'c', .commands = BP_TRACE,
	  .wants = "a command", .help = "run CMD and trace it" },
	{ "dry-run", NULL, OPT_FLAG, &parsed.dry_run, .commands = BP_TRACE,
	  .help = "print the resolved script, run nothing" },
	{ "stats-dir", "DIR", OPT_TEXT, &parsed.stats_dir, .commands = BP_TOP | BP_SLOW,
	  .wants = "a directory", .help = "every stats segment in DIR, as one service" },
	{ "once", NULL, OPT_FLAG, &parsed.once, .commands = BP_TOP,
	  .help = "print one interval as plain text and exit" },
	{ "follow", NULL, OPT_FLAG, &parsed.follow, .commands = BP_SLOW,
	  .help = "print new trails as they come, until Ctrl-C" },
	{ "id", "ID", OPT_U64, &parsed.request_id, .commands = BP_SLOW, .given = &parsed.request_id_given, .imin = 1,
	  .imax = UINT64_MAX, .help = "only the trail of request ID (kept for exemplars or recent); exit 1 when none",
	  .doc = "only the trail of request ID, as an exemplar names it: those kept for exemplars (for "
	         "`BILLING_STATS_SLOW_KEEP`, 15 minutes by default) and the recent ones; exit 1 when no segment "
	         "holds it" },
	{ "interval", "SECONDS", OPT_NUMBER, &parsed.interval, .commands = BP_TOP | BP_SLOW, .min = 0.1,
	  .max = 3600, .help = "seconds between updates (default 1)" },
};

/* Each refusal one line through bp_usage_error: escaped, naming the
 * command. */
static const char *parsing_command;

static void report(const opt_table_t *t, const char *line)
{
	char why[600];
	(void)t;
	snprintf(why, sizeof why, "%s: %s", parsing_command, line);
	bp_usage_error(why);
}

static opt_table_t table_of(unsigned int command)
{
	opt_table_t t = { .prog = "billing-probes", .options = options, .n = sizeof options / sizeof options[0], .command = command, .report = report };
	return t;
}

void bp_cli_print_options(unsigned int command)
{
	opt_table_t t = table_of(command);
	opt_print_help(stdout, &t);
}

/* What the options cannot say alone: how many TARGETs, and which
 * options go together. */
static int check_shape(const bp_command_shape_t *shape, const bp_options_t *opt)
{
	char why[300];
	if (shape->targets == BP_ONE_TARGET && opt->target_count > 1) {
		snprintf(why, sizeof why, "%s: one TARGET only ('%.200s' is a second)", opt->command, opt->targets[1]);
		return bp_usage_error(why);
	}
	if (shape->needs_target && opt->target_count == 0) {
		snprintf(why, sizeof why, "%s: a TARGET (file or PID) is needed", opt->command);
		return bp_usage_error(why);
	}
	if (opt->baseline_file && opt->save_baseline_file)
		return bp_usage_error("check: --baseline or --save-baseline, not both");
	if ((opt->baseline_file || opt->save_baseline_file) && (opt->expect_count || opt->expect_file || opt->json))
		return bp_usage_error("check: --baseline and --save-baseline take no --expect, --expect-file or --json");
	if (shape->command == BP_TRACE) {
		if (!opt->script)
			return bp_usage_error("trace: a SCRIPT is needed (a .bt path or a name such as tps)");
		if ((opt->target_count > 0) + (opt->command_line != NULL) + (opt->binary_count > 0) != 1)
			return bp_usage_error("trace: give -p PID (one or more), --binary PATH (one or more) or -c 'CMD ARGS' "
			                      "(one of them)");
	}
	return BP_EXIT_OK;
}

int bp_cli_parse(int argc, char **argv, const bp_command_shape_t *shape, bp_options_t *opt)
{
	int rest = argc - 1;
	opt_table_t t = table_of(shape->command);
	if (shape->command == BP_TRACE)
		t.rest = &rest;
	memset(&parsed, 0, sizeof parsed);
	parsed.command = parsing_command = opt->command;
	/* argv[1], the command, stands where getopt_long skips a name. */
	int rc = opt_parse(&t, argc - 1, argv + 1);
	parsed.target_count = (int)target_n;
	parsed.expect_count = (int)expect_n;
	parsed.binary_count = (int)binary_n;
	if (shape->command == BP_TRACE && rest < argc - 1) {
		parsed.script_args = argv + 1 + rest;
		parsed.script_arg_count = argc - 1 - rest;
	}
	*opt = parsed;
	opt->help = rc == OPT_HELP;
	opt->option_table_printed = rc == OPT_TABLE;
	if (rc == OPT_REFUSED)
		return BP_EXIT_ERROR;
	return rc == OPT_RUN ? check_shape(shape, opt) : BP_EXIT_OK;
}

int bp_cli_catalogue(const bp_options_t *opt, pr_catalogue_t *cat, const char **source)
{
	if (!opt->provider_file) {
		*source = "the built-in billing.d";
		if (pr_catalogue_builtin(cat) != 0) {
			bp_error("built-in catalogue", "out of memory");
			return -1;
		}
		return 0;
	}
	char err[512];
	*source = opt->provider_file;
	if (pr_catalogue_load(opt->provider_file, cat, err, sizeof err) != 0) {
		char why[600];
		snprintf(why, sizeof why, "bad provider file: %s", err);
		bp_error(opt->provider_file, why);
		return -1;
	}
	return 0;
}

int bp_cli_load_target(const char *spec, pr_probe_set_t *set)
{
	char err[512];
	if (pr_probe_set_load(spec, set, err, sizeof err) != 0) {
		bp_error(spec, err);
		return -1;
	}
	for (size_t i = 0; i < set->unreadable_count; i++)
		bp_error(spec, set->unreadable[i]);
	return 0;
}

int bp_cli_load_needed(const pr_probe_set_t *sets, size_t nsets, pr_probe_set_t *needed)
{
	char err[600], what[600];
	if (pr_probe_set_load_needed(sets, nsets, needed, err, sizeof err) != 0) {
		bp_error("the libraries the program loads", err);
		return -1;
	}
	for (size_t i = 0; i < needed->missing_count; i++) {
		const pr_missing_library_t *m = &needed->missing[i];
		snprintf(what, sizeof what, "%s (needed by %s)", m->name, m->needed_by);
		snprintf(err, sizeof err, "%s: its probes cannot be counted (name it as a TARGET, or set "
		                          "LD_LIBRARY_PATH as the service runs)",
		         m->why);
		bp_error(what, err);
	}
	for (size_t i = 0; i < needed->unreadable_count; i++)
		bp_error("a library the program loads", needed->unreadable[i]);
	return needed->missing_count || needed->unreadable_count ? -1 : 0;
}
