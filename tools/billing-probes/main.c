/*
 * main.c -- billing-probes: list, check and doctor the USDT probes of a
 * program, a library or a process.  The Linux counterpart of `dtrace -l`.
 *
 * Exit status: 0 yes / ok, 1 no (check found problems, doctor a FAIL, list
 * matched nothing), 2 the question could not be answered (bad target, bad
 * provider file, bad usage), with one line on stderr saying why.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef BILLING_PROBES_CATALOGUE
#  define BILLING_PROBES_CATALOGUE "/usr/local/share/billing-probes/billing.d"
#endif
#ifndef BILLING_PROBES_VERSION
#  define BILLING_PROBES_VERSION "unknown"
#endif

static const char usage[] =
	"usage: billing-probes list TARGET [-P PROVIDER] [-n NAME] [--json]\n"
	"       billing-probes check TARGET [TARGET...] [--provider FILE.d]\n"
	"       billing-probes doctor [-p PID | --target FILE] [--provider FILE.d]\n"
	"\n"
	"TARGET is an ELF executable or shared library, or the PID of a running\n"
	"process (its executable and every mapped library; `list` then shows\n"
	"whether each probe is being traced).  -P and -n take globs; probe names\n"
	"match as written in ELF notes (request__start) or in D (request-start).\n"
	"check with several TARGETs checks them as one program: a service and the\n"
	"shared libraries that fire some of its probes.\n"
	"The catalogue defaults to " BILLING_PROBES_CATALOGUE ".\n"
	"Exit status: 0 ok, 1 check/doctor found a problem or nothing matched,\n"
	"2 bad target, provider file or usage.\n";

const char *bp_default_provider_file(void)
{
	return BILLING_PROBES_CATALOGUE;
}

void bp_error(const char *what, const char *why)
{
	fflush(stdout);
	fprintf(stderr, "billing-probes: %s: %s\n", what, why);
}

static int usage_error(const char *why)
{
	fprintf(stderr, "billing-probes: %s (try billing-probes --help)\n", why);
	return BP_EXIT_ERROR;
}

/* "--name VALUE" or "--name=VALUE"; *i advances past what is used. */
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

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("a command is needed: list, check or doctor");
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		fputs(usage, stdout);
		return BP_EXIT_OK;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("billing-probes %s\n", BILLING_PROBES_VERSION);
		return BP_EXIT_OK;
	}
	int is_list = strcmp(cmd, "list") == 0, is_check = strcmp(cmd, "check") == 0,
	    is_doctor = strcmp(cmd, "doctor") == 0;
	if (!is_list && !is_check && !is_doctor) {
		char why[300];
		snprintf(why, sizeof why, "unknown command '%.200s': list, check or doctor", cmd);
		return usage_error(why);
	}

	bp_options_t opt;
	memset(&opt, 0, sizeof opt);
	static const char *extra_targets[256];
	opt.extra_targets = extra_targets;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = NULL;
		int r;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			return BP_EXIT_OK;
		} else if (is_list && strcmp(a, "--json") == 0) {
			opt.json = 1;
		} else if (is_list && (r = option_value(argc, argv, &i, "-P", &v)) != 0) {
			if (r < 0)
				return usage_error("-P needs a provider name");
			opt.provider_glob = v;
		} else if (is_list && (r = option_value(argc, argv, &i, "-n", &v)) != 0) {
			if (r < 0)
				return usage_error("-n needs a probe name");
			opt.name_glob = v;
		} else if ((is_check || is_doctor) && (r = option_value(argc, argv, &i, "--provider", &v)) != 0) {
			if (r < 0)
				return usage_error("--provider needs a .d file");
			opt.provider_file = v;
		} else if (is_doctor && (r = option_value(argc, argv, &i, "-p", &v)) != 0) {
			if (r < 0)
				return usage_error("-p needs a PID");
			opt.doctor_pid = v;
		} else if (is_doctor && (r = option_value(argc, argv, &i, "--target", &v)) != 0) {
			if (r < 0)
				return usage_error("--target needs a file");
			opt.doctor_target = v;
		} else if (a[0] == '-' && a[1] != '\0') {
			char why[300];
			snprintf(why, sizeof why, "%s: unknown option '%.200s'", cmd, a);
			return usage_error(why);
		} else if (!is_doctor && !opt.target) {
			opt.target = a;
		} else if (is_check) {
			if (opt.extra_target_count == (int)(sizeof extra_targets / sizeof extra_targets[0]))
				return usage_error("check: too many TARGETs (at most 257)");
			extra_targets[opt.extra_target_count++] = a;
		} else {
			char why[300];
			snprintf(why, sizeof why, "%s: unexpected argument '%.200s'", cmd, a);
			return usage_error(why);
		}
	}
	if (!is_doctor && !opt.target)
		return usage_error(is_list ? "list: a TARGET (file or PID) is needed" : "check: a TARGET (file or PID) is needed");
	if (opt.doctor_pid && opt.doctor_target)
		return usage_error("doctor: give -p PID or --target FILE, not both");

	if (is_list)
		return bp_cmd_list(&opt);
	if (is_check)
		return bp_cmd_check(&opt);
	return bp_cmd_doctor(&opt);
}
