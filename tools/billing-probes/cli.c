/*
 * cli.c -- options shared by every command, error lines, and the
 * catalogue a command compares against.
 *
 * TARGET means the same everywhere: an ELF file or a PID, positionally,
 * or -p PID / --target FILE.  --provider FILE.d means the same
 * everywhere: the catalogue, replacing the one compiled in.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "--follow prints new ones as they come until Ctrl-C, --interval apart.\n"
    "Exit status: 0 ok, 1 check/doctor found a problem or nothing matched,\n"
    "2 bad target, provider file or usage (trace: bpftrace's status).\n";

/* WHAT is often another user's text (a path, a name), and WHY may quote
 * some: both escaped (term_text.h). */
void bp_error(const char *what, const char *why)
{
	fflush(stdout);
	fputs("billing-probes: ", stderr);
	bp_put_escaped(stderr, what);
	fputs(": ", stderr);
	bp_put_escaped(stderr, why);
	fputc('\n', stderr);
}

int bp_usage_error(const char *why)
{
	fflush(stdout);
	fputs("billing-probes: ", stderr);
	bp_put_escaped(stderr, why);
	fputs(" (try billing-probes --help)\n", stderr);
	return BP_EXIT_ERROR;
}

/* "--name VALUE" or "--name=VALUE"; *i advances past what is used.
 * 1 matched, 0 not this option, -1 the value is missing. */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) != 0)
		return 0;
	if (argv[*i][n] == '=') {
		*value = argv[*i] + n + 1;
		return 1;
	}
	if (argv[*i][n] != '\0')
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*value = argv[++*i];
	return 1;
}

static int is_number(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int add_target(bp_options_t *opt, const char *spec, int many)
{
	char why[300];
	if (opt->target_count > 0 && !many) {
		snprintf(why, sizeof why, "%s: one TARGET only ('%.200s' is a second)", opt->command, spec);
		return bp_usage_error(why);
	}
	if (opt->target_count == BP_MAX_TARGETS)
		return bp_usage_error("too many TARGETs (at most 256)");
	opt->targets[opt->target_count++] = spec;
	return 0;
}

int bp_cli_parse(int argc, char **argv, const bp_command_shape_t *shape, bp_options_t *opt)
{
	char why[300];
	int many = shape->targets == BP_TARGETS;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = NULL;
		int r;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			opt->help = 1;
			return BP_EXIT_OK;
		} else if (shape->trace && strcmp(a, "--") == 0) {
			opt->script_args = argv + i + 1;
			opt->script_arg_count = argc - i - 1;
			break;
		} else if ((r = option_value(argc, argv, &i, "--provider", &v)) != 0) {
			if (r < 0)
				return bp_usage_error("--provider needs a .d file");
			opt->provider_file = v;
		} else if ((r = option_value(argc, argv, &i, "-p", &v)) != 0) {
			if (r < 0)
				return bp_usage_error("-p needs a PID");
			if (!is_number(v)) {
				bp_error(v, "-p needs a numeric PID");
				return BP_EXIT_ERROR;
			}
			if (add_target(opt, v, many) != 0)
				return BP_EXIT_ERROR;
		} else if (!shape->trace && (r = option_value(argc, argv, &i, "--target", &v)) != 0) {
			if (r < 0)
				return bp_usage_error("--target needs a file");
			if (add_target(opt, v, many) != 0)
				return BP_EXIT_ERROR;
		} else if (shape->json && strcmp(a, "--json") == 0) {
			opt->json = 1;
		} else if (shape->list_filters && (r = option_value(argc, argv, &i, "-P", &v)) != 0) {
			if (r < 0)
				return bp_usage_error("-P needs a provider name");
			opt->provider_glob = v;
		} else if (shape->list_filters && (r = option_value(argc, argv, &i, "-n", &v)) != 0) {
			if (r < 0)
				return bp_usage_error("-n needs a probe name");
			opt->name_glob = v;
		} else if (shape->expect && (r = option_value(argc, argv, &i, "--expect-file", &v)) != 0) {
			if (r < 0)
				return bp_usage_error("--expect-file needs a file");
			opt->expect_file = v;
		} else if (shape->expect && (r = option_value(argc, argv, &i, "--expect", &v)) != 0) {
			if (r < 0 || !*v)
				return bp_usage_error("--expect needs a probe name or glob");
			if (opt->expect_count == BP_MAX_EXPECT)
				return bp_usage_error("too many --expect (at most 256; use --expect-file)");
			opt->expect[opt->expect_count++] = v;
		} else if (shape->baseline && (r = option_value(argc, argv, &i, "--baseline", &v)) != 0) {
			if (r < 0 || !*v)
				return bp_usage_error("--baseline needs a file");
			opt->baseline_file = v;
		} else if (shape->baseline && (r = option_value(argc, argv, &i, "--save-baseline", &v)) != 0) {
			if (r < 0 || !*v)
				return bp_usage_error("--save-baseline needs a file");
			opt->save_baseline_file = v;
		} else if (shape->clear_stale && strcmp(a, "--clear-stale") == 0) {
			opt->clear_stale = 1;
		} else if (shape->trace && (r = option_value(argc, argv, &i, "-c", &v)) != 0) {
			if (r < 0 || !*v)
				return bp_usage_error("-c needs a command");
			opt->command_line = v;
		} else if (shape->trace && (r = option_value(argc, argv, &i, "--binary", &v)) != 0) {
			if (r < 0 || !*v)
				return bp_usage_error("--binary needs the path of a program or library");
			if (opt->binary_count == BP_MAX_TARGETS)
				return bp_usage_error("too many --binary (at most 256)");
			opt->binaries[opt->binary_count++] = v;
		} else if (shape->trace && strcmp(a, "--dry-run") == 0) {
			opt->dry_run = 1;
		} else if ((shape->top || shape->slow) && (r = option_value(argc, argv, &i, "--stats-dir", &v)) != 0) {
			if (r < 0 || !*v)
				return bp_usage_error("--stats-dir needs a directory");
			opt->stats_dir = v;
		} else if (shape->top && strcmp(a, "--once") == 0) {
			opt->once = 1;
		} else if (shape->slow && strcmp(a, "--follow") == 0) {
			opt->follow = 1;
		} else if ((shape->top || shape->slow) && (r = option_value(argc, argv, &i, "--interval", &v)) != 0) {
			char *end;
			opt->interval = r < 0 ? 0 : strtod(v, &end);
			if (r < 0 || end == v || *end || !(opt->interval >= 0.1 && opt->interval <= 3600))
				return bp_usage_error("--interval needs SECONDS from 0.1 to 3600");
		} else if (a[0] == '-' && a[1] != '\0') {
			snprintf(why, sizeof why, "%s: unknown option '%.200s'", opt->command, a);
			return bp_usage_error(why);
		} else if (shape->trace && !opt->script) {
			opt->script = a;
		} else if (shape->targets != BP_NO_TARGET && !shape->trace) {
			if (add_target(opt, a, many) != 0)
				return BP_EXIT_ERROR;
		} else {
			snprintf(why, sizeof why, "%s: unexpected argument '%.200s'", opt->command, a);
			return bp_usage_error(why);
		}
	}
	if (shape->needs_target && opt->target_count == 0) {
		snprintf(why, sizeof why, "%s: a TARGET (file or PID) is needed", opt->command);
		return bp_usage_error(why);
	}
	if (opt->baseline_file && opt->save_baseline_file)
		return bp_usage_error("check: --baseline or --save-baseline, not both");
	if ((opt->baseline_file || opt->save_baseline_file) && (opt->expect_count || opt->expect_file || opt->json))
		return bp_usage_error("check: --baseline and --save-baseline take no --expect, --expect-file or --json");
	if (shape->trace) {
		if (!opt->script)
			return bp_usage_error("trace: a SCRIPT is needed (a .bt path or a name such as tps)");
		if ((opt->target_count > 0) + (opt->command_line != NULL) + (opt->binary_count > 0) != 1)
			return bp_usage_error("trace: give -p PID (one or more), --binary PATH (one or more) or -c 'CMD ARGS' "
			                      "(one of them)");
	}
	return BP_EXIT_OK;
}

int bp_cli_catalogue(const bp_options_t *opt, bp_catalogue_t *cat, const char **source)
{
	if (!opt->provider_file) {
		*source = "the built-in billing.d";
		if (bp_catalogue_builtin(cat) != 0) {
			bp_error("built-in catalogue", "out of memory");
			return -1;
		}
		return 0;
	}
	char err[512];
	*source = opt->provider_file;
	if (bp_catalogue_load(opt->provider_file, cat, err, sizeof err) != 0) {
		char why[600];
		snprintf(why, sizeof why, "bad provider file: %s", err);
		bp_error(opt->provider_file, why);
		return -1;
	}
	return 0;
}

int bp_cli_load_target(const char *spec, bp_probe_set_t *set)
{
	char err[512];
	if (bp_probe_set_load(spec, set, err, sizeof err) != 0) {
		bp_error(spec, err);
		return -1;
	}
	for (size_t i = 0; i < set->unreadable_count; i++)
		bp_error(spec, set->unreadable[i]);
	return 0;
}

int bp_cli_load_needed(const bp_probe_set_t *sets, size_t nsets, bp_probe_set_t *needed)
{
	char err[600], what[600];
	if (bp_probe_set_load_needed(sets, nsets, needed, err, sizeof err) != 0) {
		bp_error("the libraries the program loads", err);
		return -1;
	}
	for (size_t i = 0; i < needed->missing_count; i++) {
		const bp_missing_library_t *m = &needed->missing[i];
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
