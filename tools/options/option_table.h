/*
 * option_table.h -- one table of options per program drives getopt_long,
 * checks each value strictly (a typo in a number is an error, not a zero;
 * a single-valued option given twice is refused, since which value wins
 * would be a guess), and prints --help and the docs' markdown table.
 *
 * Its own folder under tools/ because both tools (billing-probes,
 * billing-exporter) and the examples (billingd, billing-load) link it: a
 * static library of the tree, never installed, with no dependency but libc
 * and libm, so a build without the tools still builds the examples.
 */
#ifndef BILLING_OPTION_TABLE_H
#define BILLING_OPTION_TABLE_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	OPT_UINT,   /* unsigned int, imin..imax */
	OPT_U64,    /* uint64_t, imin..imax */
	OPT_NUMBER, /* double, finite, min..max */
	OPT_TEXT,   /* const char *, not empty (points into argv) */
	OPT_FLAG,   /* int set to 1; takes no value */
	OPT_PARSED, /* parse(text, out, ...) == 0 accepts the value */
	OPT_LIST    /* repeatable: const char *out[max], *count of them */
} opt_kind_t;

typedef struct opt_option {
	const char *name; /* the long option, without "--"; NULL: an operand */
	const char *arg;  /* what --help shows for its value, e.g. "N" */
	opt_kind_t kind;
	void *out;        /* where the value goes: the type its kind names */
	const char *help; /* one line each, '\n' between lines */
	const char *doc;  /* the docs table's markdown; NULL: help */
	const char *init; /* the default, as typed; --help shows it */
	int *given;       /* when not NULL: set to 1 when the option is used */
	char letter;      /* the short option (-p), or 0; -h is --help's */
	/* The commands of a program of several that take it (bit i: command
	 * i of opt_table_t.command); 0: every one. */
	unsigned int commands;
	/* OPT_UINT and OPT_U64: imin..imax; OPT_NUMBER: min..max */
	unsigned long long imin, imax;
	double min, max;
	/* OPT_PARSED, and OPT_LIST when not NULL: parse(text, out, why,
	 * whylen) == 0 accepts (OPT_LIST: out is the list's next slot).  On
	 * refusal, why says what is wrong, or stays empty for the line
	 * "--name needs WANTS, got 'TEXT'" */
	int (*parse)(const char *text, void *out, char *why, size_t whylen);
	const char *wants; /* "a file": also the missing value's line */
	size_t most;       /* OPT_LIST: at most so many values */
	size_t *count;     /* OPT_LIST: how many there are */
} opt_option_t;

typedef struct opt_table {
	const char *prog;  /* names the program in the default error line */
	const char *usage; /* --help's first line, after "usage: PROG " */
	const opt_option_t *options;
	size_t n;
	unsigned int command; /* the command parsed (a bit of .commands), or 0 */
	/* Prints the one error line (line holds no newline); NULL: "PROG:
	 * LINE" on stderr. */
	void (*report)(const struct opt_table *t, const char *line);
	/* When not NULL: receives the index of the first argument after
	 * "--" (argc when none), and those are left to the caller; when
	 * NULL they are operands like any. */
	int *rest;
} opt_table_t;

enum { OPT_RUN = 0,
       OPT_HELP = 1,
       OPT_TABLE = 2,
       OPT_REFUSED = -1 };

/* Sets each option's default (init), then parses argv[1..] against the
 * table's options for t->command, -h, --help and --print-option-table.
 * Operands go to the entries without a name, in order (see rest for what
 * follows "--").  Returns OPT_RUN; OPT_HELP after printing the usage on
 * stdout when t->usage is set (else the caller prints it); OPT_TABLE after
 * printing the markdown table on stdout; OPT_REFUSED after one error line. */
int opt_parse(const opt_table_t *t, int argc, char **argv);

/* The options' --help lines (t->command's), "  -p, --name ARG  help". */
void opt_print_help(FILE *out, const opt_table_t *t);

/* The docs' markdown table of t->command's options. */
void opt_print_markdown(FILE *out, const opt_table_t *t);

#ifdef __cplusplus
}
#endif

#endif /* BILLING_OPTION_TABLE_H */
