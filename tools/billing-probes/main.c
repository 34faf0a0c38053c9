/*
 * main.c -- billing-probes: list, check, doctor and trace the USDT probes
 * of a program, a library or a process.  The Linux counterpart of
 * `dtrace -l`, plus the checks a service's CI and an SRE need.
 *
 * Exit status: 0 yes / ok, 1 no (check found problems, doctor a FAIL, list
 * matched nothing), 2 the question could not be answered (bad target, bad
 * provider file, bad usage), with one line on stderr saying why.  trace
 * exits with bpftrace's status.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

#ifndef BILLING_PROBES_VERSION
#  define BILLING_PROBES_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
	if (argc < 2)
		return bp_usage_error("a command is needed: list, check, doctor or trace");
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		fputs(bp_cli_usage, stdout);
		return BP_EXIT_OK;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("billing-probes %s\n", BILLING_PROBES_VERSION);
		return BP_EXIT_OK;
	}
	static bp_options_t opt;
	opt.command = cmd;
	int done;
	int rc = bp_cli_parse(argc, argv, &opt, &done);
	if (rc != BP_EXIT_OK || done)
		return rc;
	if (strcmp(cmd, "list") == 0)
		return bp_cmd_list(&opt);
	if (strcmp(cmd, "check") == 0)
		return bp_cmd_check(&opt);
	if (strcmp(cmd, "doctor") == 0)
		return bp_cmd_doctor(&opt);
	return bp_cmd_trace(&opt);
}
