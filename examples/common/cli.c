/*
 * cli.c -- the examples' command lines (cli.h): getopt_long over a list
 * of options, --help and the markdown option table from the same list.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long's value for option i is FIRST_VAL + i: above every letter. */
#define FIRST_VAL 256
#define TABLE_VAL 2

int cli_refuse(const cli_t *cli, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "%s: ", cli->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

int cli_wrong(const cli_t *cli, size_t i, const char *wants, const char *text)
{
	if (text == NULL || text[0] == '\0')
		return cli_refuse(cli, "--%s needs %s", cli->options[i].name, wants);
	return cli_refuse(cli, "--%s needs %s, got '%s'", cli->options[i].name, wants, text);
}

int cli_uint(const cli_t *cli, size_t i, const char *text, unsigned long long min, unsigned long long max,
             unsigned long long *out)
{
	char wants[64], *end = NULL;
	snprintf(wants, sizeof wants, "an integer %llu..%llu", min, max);
	if (text == NULL || text[0] < '0' || text[0] > '9')
		return cli_wrong(cli, i, wants, text);
	errno = 0;
	*out = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0' || *out < min || *out > max)
		return cli_wrong(cli, i, wants, text);
	return 0;
}

int cli_uint32(const cli_t *cli, size_t i, const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	if (cli_uint(cli, i, text, min, max, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int cli_uint64(const cli_t *cli, size_t i, const char *text, uint64_t *out)
{
	unsigned long long v;
	if (cli_uint(cli, i, text, 0, UINT64_MAX, &v) != 0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

int cli_number(const cli_t *cli, size_t i, const char *text, double min, double max, double *out)
{
	char wants[64], *end = NULL;
	snprintf(wants, sizeof wants, "a number %g..%g", min, max);
	if (text == NULL)
		return cli_wrong(cli, i, wants, text);
	errno = 0;
	*out = strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !isfinite(*out) || *out < min || *out > max)
		return cli_wrong(cli, i, wants, text);
	return 0;
}

int cli_text(const cli_t *cli, size_t i, const char *text, const char *wants, const char **out)
{
	if (text == NULL || text[0] == '\0')
		return cli_wrong(cli, i, wants, NULL);
	*out = text;
	return 0;
}

/* "--name ARG" */
static int synopsis(char *buf, size_t len, const cli_option_t *o, const char *code)
{
	return snprintf(buf, len, "%s--%s%s%s%s", code, o->name, code, o->arg ? " " : "", o->arg ? o->arg : "");
}

static void print_help(const cli_t *cli)
{
	char spelled[128];
	int column = 22; /* "  --print-option-table" */
	for (size_t i = 0; i < cli->n; i++) {
		int width = 2 + synopsis(spelled, sizeof spelled, &cli->options[i], "");
		column = width > column ? width : column;
	}
	column += 2;
	printf("usage: %s [options]\n", cli->prog);
	for (size_t i = 0; i < cli->n; i++) {
		const cli_option_t *o = &cli->options[i];
		const char *line = o->help;
		synopsis(spelled, sizeof spelled, o, "");
		int width = printf("  %s", spelled);
		for (;;) {
			const char *end = strchr(line, '\n');
			int len = end ? (int)(end - line) : (int)strlen(line);
			printf("%*s%.*s", column - width, "", len, line);
			if (end == NULL)
				break;
			putchar('\n');
			line = end + 1;
			width = 0;
		}
		if (o->init != NULL)
			printf(" (default %s)", o->init);
		putchar('\n');
	}
	printf("  --print-option-table%*sthe options as a markdown table\n", column - 22, "");
	printf("  -h, --help%*sthis text\n", column - 12, "");
}

/* Text in a markdown table cell: '|' escaped, lines joined. */
static void put_cell(const char *text)
{
	for (; *text != '\0'; text++) {
		if (*text == '|')
			fputs("\\|", stdout);
		else
			putchar(*text == '\n' ? ' ' : *text);
	}
}

static void print_table(const cli_t *cli)
{
	char spelled[128];
	fputs("| option | meaning | default |\n| --- | --- | --- |\n", stdout);
	for (size_t i = 0; i < cli->n; i++) {
		const cli_option_t *o = &cli->options[i];
		synopsis(spelled, sizeof spelled, o, "`");
		printf("| %s | ", spelled);
		put_cell(o->help);
		fputs(" | ", stdout);
		if (o->init != NULL) {
			putchar('`');
			put_cell(o->init);
			putchar('`');
		}
		fputs(" |\n", stdout);
	}
}

/* The option getopt_long could not take: unknown, or a value given to
 * a flag. */
static int refuse_option(const cli_t *cli, char **argv)
{
	const char *arg = argv[optind - 1];
	if (optopt >= FIRST_VAL)
		return cli_refuse(cli, "--%s takes no value", cli->options[optopt - FIRST_VAL].name);
	if (optopt != 0 && strncmp(arg, "--", 2) == 0) /* --help=, --print-option-table= */
		return cli_refuse(cli, "%.*s takes no value", (int)strcspn(arg, "="), arg);
	if (optopt != 0)
		return cli_refuse(cli, "unknown option '-%c'", optopt);
	return cli_refuse(cli, "unknown option '%s'", arg);
}

int cli_parse(const cli_t *cli, cli_take_fn take, void *ctx, int argc, char **argv)
{
	struct option longopts[CLI_MAX + 3];
	unsigned char seen[CLI_MAX] = { 0 };
	size_t i;
	int c;

	if (cli->n > CLI_MAX)
		return cli_refuse(cli, "more than %d options", CLI_MAX);
	memset(longopts, 0, sizeof longopts);
	for (i = 0; i < cli->n; i++) {
		longopts[i].name = cli->options[i].name;
		longopts[i].has_arg = cli->options[i].arg ? required_argument : no_argument;
		longopts[i].val = FIRST_VAL + (int)i;
		if (cli->options[i].init != NULL && take(ctx, cli, i, cli->options[i].init) != 0)
			return CLI_REFUSED;
	}
	longopts[i].name = "help";
	longopts[i].val = 'h';
	longopts[i + 1].name = "print-option-table";
	longopts[i + 1].val = TABLE_VAL;

	opterr = 0;
	optind = 0; /* afresh, reading "-:" again: operands in order, ':' a missing value */
	while ((c = getopt_long(argc, argv, "-:h", longopts, NULL)) != -1) {
		if (c == 'h') {
			print_help(cli);
			return CLI_DONE;
		}
		if (c == TABLE_VAL) {
			print_table(cli);
			return CLI_DONE;
		}
		if (c == 1)
			return cli_refuse(cli, "unexpected argument '%s'", optarg);
		if (c == ':' && optopt >= FIRST_VAL) { /* the value left out: take says what it needs */
			i = (size_t)(optopt - FIRST_VAL);
			if (take(ctx, cli, i, NULL) == 0)
				cli_refuse(cli, "--%s needs a value", cli->options[i].name);
			return CLI_REFUSED;
		}
		if (c < FIRST_VAL)
			return refuse_option(cli, argv);
		i = (size_t)(c - FIRST_VAL);
		if (seen[i])
			return cli_refuse(cli, "--%s given twice (it takes one value)", cli->options[i].name);
		seen[i] = 1;
		if (take(ctx, cli, i, optarg) != 0)
			return CLI_REFUSED;
	}
	return CLI_RUN;
}
