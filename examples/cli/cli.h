/*
 * cli.h -- a strict command line from one table of long options: the
 * table gives getopt_long its options, checks each value (a typo in a
 * number is an error, not a zero) and prints --help.  billingd and
 * billing-load use it.
 */
#ifndef EXAMPLES_CLI_H
#define EXAMPLES_CLI_H

#include <stddef.h>

typedef enum {
	CLI_UINT,   /* unsigned int, imin..imax */
	CLI_U64,    /* uint64_t, imin..imax */
	CLI_NUMBER, /* double, finite, min..max */
	CLI_TEXT,   /* const char *, not empty (points into argv) */
	CLI_FLAG,   /* int set to 1; takes no value */
	CLI_PARSED  /* parse(text, out) == 0 accepts the value */
} cli_kind_t;

typedef struct {
	const char *name; /* the long option, without "--" */
	const char *arg;  /* what --help shows for its value, e.g. "N" */
	cli_kind_t kind;
	void *out;        /* where the value goes: the type its kind names */
	const char *help; /* one line each, '\n' between lines */
	const char *init; /* the default, as typed; --help shows it */
	int *given;       /* when not NULL: set to 1 when the option is used */
	/* CLI_UINT and CLI_U64: imin..imax; CLI_NUMBER: min..max */
	unsigned long long imin, imax;
	double min, max;
	/* CLI_PARSED: parse(text, out) == 0 accepts; CLI_TEXT and CLI_PARSED:
	 * the error says "--name wants WANTS" */
	int (*parse)(const char *text, void *out);
	const char *wants;
} cli_option_t;

/* Sets each option's default (init), then parses argv[1..] against
 * options[0..n-1] and --help.  Returns 0 to run,
 * 1 after printing the usage (--help) on stdout, -1 after printing one
 * line "PROG: ..." on stderr. */
int cli_parse(const char *prog, const cli_option_t *options, size_t n, int argc, char **argv);

#endif /* EXAMPLES_CLI_H */
