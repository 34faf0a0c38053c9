/*
 * cli.h -- the examples' command lines: one list of options per program
 * gives getopt_long its table, --help its lines and the README its option
 * table (--print-option-table); the program stores each value itself, and
 * a number is taken whole or refused in one line, never read as a zero.
 */
#ifndef EXAMPLES_CLI_H
#define EXAMPLES_CLI_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_option {
	const char *name; /* the long option, without "--" */
	const char *arg;  /* its value as --help shows it ("N"); NULL: a flag */
	const char *help; /* one line each, '\n' between lines */
	const char *init; /* the default as typed, taken before argv; NULL: none */
} cli_option_t;

typedef struct cli {
	const char *prog; /* names the program in --help and in a refusal */
	const cli_option_t *options;
	size_t n;
} cli_t;

enum { CLI_RUN = 0,
       CLI_DONE = 1,
       CLI_REFUSED = -1,
       CLI_MAX = 32 };

/* Stores option i's value (text: NULL for a flag, and for a value left
 * out, which the helpers below refuse); 0, or -1 after one line said why.
 * A default comes as the option's init pointer itself, so take tells it
 * from a value given on the command line. */
typedef int (*cli_take_fn)(void *ctx, const cli_t *cli, size_t i, const char *text);

/* Takes every default, then argv.  Returns CLI_RUN; CLI_DONE after
 * printing --help or the option table on stdout; CLI_REFUSED after one
 * line on stderr (an unknown option, a value missing or given to a flag,
 * an option given twice, an operand, a value take refused). */
int cli_parse(const cli_t *cli, cli_take_fn take, void *ctx, int argc, char **argv);

/* "PROG: LINE" on stderr; returns -1. */
int cli_refuse(const cli_t *cli, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* "--NAME needs WANTS, got 'TEXT'" ("--NAME needs WANTS" when text is
 * NULL or empty); returns -1. */
int cli_wrong(const cli_t *cli, size_t i, const char *wants, const char *text);

/* A whole decimal number min..max, or -1 after the line. */
int cli_uint(const cli_t *cli, size_t i, const char *text, unsigned long long min, unsigned long long max,
             unsigned long long *out);
/* The same into a 32-bit or a 64-bit (0..2^64-1) unsigned value. */
int cli_uint32(const cli_t *cli, size_t i, const char *text, uint32_t min, uint32_t max, uint32_t *out);
int cli_uint64(const cli_t *cli, size_t i, const char *text, uint64_t *out);
/* A finite number min..max, or -1 after the line. */
int cli_number(const cli_t *cli, size_t i, const char *text, double min, double max, double *out);
/* Text that is not empty, or -1 after "--NAME needs WANTS". */
int cli_text(const cli_t *cli, size_t i, const char *text, const char *wants, const char **out);

#endif /* EXAMPLES_CLI_H */
