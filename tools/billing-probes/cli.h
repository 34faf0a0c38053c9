/*
 * cli.h -- the command line every command shares: its options, exit
 * codes, the catalogue to compare against, and the one way an error
 * reaches the user.  Commands call into cli.c; cli.c calls no command.
 */
#ifndef BP_CLI_H
#define BP_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "probe_reader.h"

/* Set by the build (meson: the project version). */
#ifndef BILLING_PROBES_VERSION
#  define BILLING_PROBES_VERSION "unknown"
#endif

/* Exit codes: the answer is yes / the answer is no / the question was bad. */
enum { BP_EXIT_OK = 0,
       BP_EXIT_FAIL = 1,
       BP_EXIT_ERROR = 2 };

enum { BP_MAX_TARGETS = 256,
       BP_MAX_EXPECT = 256 };

typedef struct bp_options {
	const char *command;
	int help; /* -h, --help */
	/* TARGET, the same in every command: FILE or PID positionally,
	 * or -p PID / --target FILE (doctor's old spellings). */
	const char *targets[BP_MAX_TARGETS];
	int target_count;
	const char *provider_file;         /* --provider FILE.d: the catalogue (default built in) */
	const char *provider_glob;         /* list -P */
	const char *name_glob;             /* list -n */
	const char *expect[BP_MAX_EXPECT]; /* check --expect NAME */
	int expect_count;
	const char *expect_file;  /* check --expect-file FILE */
	int json;                 /* list, check --json */
	int clear_stale;          /* doctor --clear-stale */
	const char *script;       /* trace SCRIPT */
	const char *command_line; /* trace -c 'CMD ARGS' */
	/* check --baseline FILE, --save-baseline FILE (check_baseline.h) */
	const char *baseline_file;
	const char *save_baseline_file;
	/* trace --binary PATH...: every process of those files */
	const char *binaries[BP_MAX_TARGETS];
	int binary_count;
	int dry_run;        /* trace --dry-run */
	char **script_args; /* trace: what follows -- */
	int script_arg_count;
	const char *stats_dir;    /* top --stats-dir DIR */
	int once;                 /* top --once */
	double interval;          /* top, slow --interval SECONDS (0: the default) */
	int follow;               /* slow --follow */
	int option_table_printed; /* --print-option-table: nothing more to do */

	uint64_t request_id; /* slow --id ID, when request_id_given */
	int request_id_given;
} bp_options_t;

/* The commands, as option_table.h's command bits: which take an option
 * is written once, in cli.c's option table. */
enum { BP_LIST = 1u << 0,
       BP_CHECK = 1u << 1,
       BP_DOCTOR = 1u << 2,
       BP_TRACE = 1u << 3,
       BP_TOP = 1u << 4,
       BP_SLOW = 1u << 5 };

/* What a command takes besides its options. */
typedef struct bp_command_shape {
	enum { BP_ONE_TARGET,
	       BP_TARGETS } targets;
	int needs_target;     /* TARGET required */
	unsigned int command; /* BP_LIST ...: its options in cli.c's table */
} bp_command_shape_t;

/* Parse argv[2..] for opt->command, shaped by shape.  BP_EXIT_OK, or
 * BP_EXIT_ERROR after printing one usage line; opt->help is set when
 * --help was asked for (the rest is then not parsed). */
int bp_cli_parse(int argc, char **argv, const bp_command_shape_t *shape, bp_options_t *opt);
/* The --help lines of command's options, on stdout. */
void bp_cli_print_options(unsigned int command);
/* What the usage text says after the commands' lines. */
extern const char bp_cli_help[];

/* "billing-probes: WHAT: WHY" on stderr, one line. */
void bp_error(const char *what, const char *why);
/* "billing-probes: WHY (try billing-probes --help)"; returns BP_EXIT_ERROR. */
int bp_usage_error(const char *why);

/* The catalogue: --provider FILE.d when given, else the one built in.
 * *source receives what to call it in messages.  0, or -1 after the one
 * error line. */
int bp_cli_catalogue(const bp_options_t *opt, pr_catalogue_t *cat, const char **source);

/* Load TARGET into set, or print the one error line and return -1.  A
 * process's modules that could not be read are one line each on stderr
 * (set->unreadable_count of them); the caller decides the exit status. */
int bp_cli_load_target(const char *spec, pr_probe_set_t *set);

/* The shared libraries the file sets of sets[0..nsets) load, found as the
 * dynamic loader finds them, into needed (pr_probe_set_load_needed): 0,
 * or -1 after one line per library that cannot be found or read (its
 * probes would be missing from any answer) or the one error line.  Free
 * needed either way. */
int bp_cli_load_needed(const pr_probe_set_t *sets, size_t nsets, pr_probe_set_t *needed);

#endif /* BP_CLI_H */
