/*
 * cli.h -- the command line: options shared by the commands, exit codes,
 * and the one way an error reaches the user.
 */
#ifndef BP_CLI_H
#define BP_CLI_H

/* Exit codes: the answer is yes / the answer is no / the question was bad. */
enum { BP_EXIT_OK = 0, BP_EXIT_FAIL = 1, BP_EXIT_ERROR = 2 };

typedef struct bp_options {
	const char *target;        /* list, check: the first TARGET */
	const char **extra_targets; /* check: more TARGETs, checked as one program */
	int extra_target_count;
	const char *provider_file; /* --provider FILE.d */
	const char *provider_glob; /* -P */
	const char *name_glob;     /* -n */
	const char *doctor_pid;    /* doctor -p PID */
	const char *doctor_target; /* doctor --target FILE */
	int json;
} bp_options_t;

/* The catalogue used when --provider is not given: the installed billing.d. */
const char *bp_default_provider_file(void);

/* "billing-probes: WHAT: WHY" on stderr, one line. */
void bp_error(const char *what, const char *why);

int bp_cmd_list(const bp_options_t *opt);
int bp_cmd_check(const bp_options_t *opt);
int bp_cmd_doctor(const bp_options_t *opt);

#endif /* BP_CLI_H */
