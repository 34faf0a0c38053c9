/*
 * cli.c -- parse a command line against a table of long options.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long's value for options[0]: above every character it returns. */
#define FIRST_VAL 256

static int option_width(const cli_option_t *o)
{
	return 4 + (int)strlen(o->name) + (o->arg ? 1 + (int)strlen(o->arg) : 0);
}

/* "  --name ARG" then the help, its lines in a column two past the widest. */
static void print_usage(const char *prog, const cli_option_t *options, size_t n)
{
	int column = 8;
	size_t i;
	for (i = 0; i < n; i++)
		if (option_width(&options[i]) > column)
			column = option_width(&options[i]);
	column += 2;
	printf("usage: %s [options]\n", prog);
	for (i = 0; i < n; i++) {
		const char *line = options[i].help;
		int width = printf("  --%s%s%s", options[i].name, options[i].arg ? " " : "",
		                   options[i].arg ? options[i].arg : "");
		for (;;) {
			const char *end = strchr(line, '\n');
			int len = end ? (int)(end - line) : (int)strlen(line);
			printf("%*s%.*s", column - width, "", len, line);
			if (end == NULL)
				break;
			printf("\n");
			line = end + 1;
			width = 0;
		}
		if (options[i].init != NULL)
			printf(" (default %s)", options[i].init);
		printf("\n");
	}
	printf("  --help%*sthis text\n", column - 8, "");
}

static int parse_integer(const cli_option_t *o, const char *text, unsigned long long *v)
{
	char *end = NULL;
	errno = 0;
	if (text[0] < '0' || text[0] > '9')
		return -1;
	*v = strtoull(text, &end, 10);
	return errno != 0 || *end != '\0' || *v < o->imin || *v > o->imax ? -1 : 0;
}

static int parse_number(const cli_option_t *o, const char *text, double *v)
{
	char *end = NULL;
	errno = 0;
	*v = strtod(text, &end);
	return errno != 0 || end == text || *end != '\0' || !isfinite(*v) || *v < o->min ||
	               *v > o->max
	           ? -1
	           : 0;
}

/* Stores text as o's value, or prints why not and returns -1. */
static int take_value(const char *prog, const cli_option_t *o, const char *text)
{
	unsigned long long u;
	double d;

	switch (o->kind) {
	case CLI_UINT:
	case CLI_U64:
		if (parse_integer(o, text, &u) != 0) {
			fprintf(stderr, "%s: --%s wants an integer %llu..%llu, got '%s'\n", prog,
			        o->name, o->imin, o->imax, text);
			return -1;
		}
		if (o->kind == CLI_UINT)
			*(unsigned int *)o->out = (unsigned int)u;
		else
			*(uint64_t *)o->out = (uint64_t)u;
		return 0;
	case CLI_NUMBER:
		if (parse_number(o, text, &d) != 0) {
			fprintf(stderr, "%s: --%s wants a number %g..%g, got '%s'\n", prog, o->name,
			        o->min, o->max, text);
			return -1;
		}
		*(double *)o->out = d;
		return 0;
	case CLI_TEXT:
		if (text[0] == '\0') {
			fprintf(stderr, "%s: --%s wants %s\n", prog, o->name, o->wants);
			return -1;
		}
		*(const char **)o->out = text;
		return 0;
	case CLI_FLAG:
		*(int *)o->out = 1;
		return 0;
	case CLI_PARSED:
		if (o->parse(text, o->out) != 0) {
			fprintf(stderr, "%s: --%s wants %s, got '%s'\n", prog, o->name, o->wants, text);
			return -1;
		}
		return 0;
	}
	return -1;
}

int cli_parse(const char *prog, const cli_option_t *options, size_t n, int argc, char **argv)
{
	struct option *longopts = calloc(n + 2, sizeof(*longopts));
	int c, rc = 0;
	size_t i;

	if (longopts == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	for (i = 0; i < n; i++) {
		longopts[i].name = options[i].name;
		longopts[i].has_arg = options[i].kind == CLI_FLAG ? no_argument : required_argument;
		longopts[i].val = FIRST_VAL + (int)i;
	}
	longopts[n].name = "help";
	longopts[n].val = FIRST_VAL + (int)n;

	for (i = 0; i < n && rc == 0; i++)
		if (options[i].init != NULL)
			rc = take_value(prog, &options[i], options[i].init);
	opterr = 0;
	optind = 1;
	while (rc == 0 && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c >= FIRST_VAL && (size_t)(c - FIRST_VAL) < n) {
			const cli_option_t *o = &options[c - FIRST_VAL];
			rc = take_value(prog, o, optarg);
			if (rc == 0 && o->given != NULL)
				*o->given = 1;
		} else if (c == FIRST_VAL + (int)n) {
			print_usage(prog, options, n);
			rc = 1;
		} else {
			fprintf(stderr, "%s: unknown or incomplete option '%s' (try --help)\n", prog,
			        argv[optind - 1]);
			rc = -1;
		}
	}
	if (rc == 0 && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", prog, argv[optind]);
		rc = -1;
	}
	free(longopts);
	return rc;
}
