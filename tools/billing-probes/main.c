/*
 * main.c -- billing-probes: list, check, doctor and trace the USDT probes
 * of a program, a library or a process, and show a service's stats
 * segments (top, slow).  The Linux counterpart of `dtrace -l`, plus the
 * checks a service's CI and an SRE need.
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

/* Every command: its name, usage, what it takes, and what runs it.  The
 * usage text, the dispatch and the "unknown command" line come from here;
 * its options from cli.c's option table. */
typedef struct command {
	const char *name;
	const char *usage; /* after "billing-probes NAME "; more lines indented */
	bp_command_shape_t shape;
	int (*run)(const bp_options_t *opt);
} command_t;

static const command_t commands[] = {
	{
	    .name = "list",
	    .usage = "TARGET [-P PROVIDER] [-n NAME] [--json] [--provider FILE.d]",
	    .shape = { .targets = BP_ONE_TARGET, .needs_target = 1, .command = BP_LIST },
	    .run = bp_cmd_list,
	},
	{
	    .name = "check",
	    .usage = "TARGET [TARGET...] [--expect NAME]... [--expect-file FILE]\n"
	             "                            [--json] [--provider FILE.d]\n"
	             "       billing-probes check TARGET [TARGET...] (--save-baseline FILE | --baseline FILE)\n"
	             "                            [--provider FILE.d]",
	    .shape = { .targets = BP_TARGETS, .needs_target = 1, .command = BP_CHECK },
	    .run = bp_cmd_check,
	},
	{
	    .name = "doctor",
	    .usage = "[TARGET] [--clear-stale] [--provider FILE.d]",
	    .shape = { .targets = BP_ONE_TARGET, .command = BP_DOCTOR },
	    .run = bp_cmd_doctor,
	},
	{
	    .name = "trace",
	    .usage = "SCRIPT (-p PID [-p PID...] | --binary PATH [--binary PATH...]\n"
	             "                            | -c 'CMD ARGS') [--dry-run]\n"
	             "                            [--provider FILE.d] [-- SCRIPT-ARGS...]",
	    .shape = { .targets = BP_TARGETS, .command = BP_TRACE },
	    .run = bp_cmd_trace,
	},
#ifdef BP_HAVE_TOP
	{
	    .name = "top",
	    .usage = "(PID | --stats-dir DIR) [--interval SECONDS] [--once]",
	    .shape = { .targets = BP_ONE_TARGET, .command = BP_TOP },
	    .run = bp_cmd_top,
	},
	{
	    .name = "slow",
	    .usage = "(PID | --stats-dir DIR) [--id ID | --follow [--interval SECONDS]]",
	    .shape = { .targets = BP_ONE_TARGET, .command = BP_SLOW },
	    .run = bp_cmd_slow,
	},
#endif
};
enum { COMMAND_COUNT = sizeof commands / sizeof commands[0] };

static int usage(void)
{
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		printf("%s billing-probes %s %s\n", i == 0 ? "usage:" : "      ", commands[i].name, commands[i].usage);
	printf("\n%s", bp_cli_help);
	return BP_EXIT_OK;
}

/* what, then "list, check, doctor or trace". */
static int command_error(const char *what)
{
	char why[400];
	size_t n = (size_t)snprintf(why, sizeof why, "%s", what);
	for (size_t i = 0; i < COMMAND_COUNT && n < sizeof why; i++) {
		const char *sep = i == 0 ? "" : i + 1 < COMMAND_COUNT ? ", "
		                                                      : " or ";
		n += (size_t)snprintf(why + n, sizeof why - n, "%s%s", sep, commands[i].name);
	}
	return bp_usage_error(why);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return command_error("a command is needed: ");
	const char *name = argv[1];
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0)
		return usage();
	if (strcmp(name, "--version") == 0) {
		printf("billing-probes %s\n", BILLING_PROBES_VERSION);
		return BP_EXIT_OK;
	}
	const command_t *cmd = NULL;
	for (size_t i = 0; i < COMMAND_COUNT && !cmd; i++)
		if (strcmp(name, commands[i].name) == 0)
			cmd = &commands[i];
	if (!cmd) {
		char what[260];
		snprintf(what, sizeof what, "unknown command '%.200s': ", name);
		return command_error(what);
	}
	static bp_options_t opt;
	opt.command = cmd->name;
	int rc = bp_cli_parse(argc, argv, &cmd->shape, &opt);
	if (rc != BP_EXIT_OK)
		return rc;
	if (opt.help) {
		printf("usage: billing-probes %s %s\n", cmd->name, cmd->usage);
		bp_cli_print_options(cmd->shape.command);
		return BP_EXIT_OK;
	}
	if (opt.option_table_printed)
		return BP_EXIT_OK;
	return cmd->run(&opt);
}
