/*
 * option_table.c -- parse a command line against a table of options;
 * print its --help lines and its docs table.
 */
#include "option_table.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long's value for options[0]: above every character it returns. */
#define FIRST_VAL 256
/* getopt_long's value for -h and --help, and for --print-option-table
 * (below every letter, above getopt's 1 for an operand). */
#define HELP_VAL 'h'
#define TABLE_VAL 2

/* The state of one parse: the table, and what each option has had. */
typedef struct parse {
	const opt_table_t *t;
	unsigned char *seen;
} parse_t;

static void opt_refuse(const opt_table_t *t, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	void (*say_refusal)(const opt_table_t *, const char *) = t->report;
	if (say_refusal != NULL) {
		say_refusal(t, line);
		return;
	}
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", t->prog, line);
}

/* Whether option o belongs to command (a bit; 0: every command). */
static int opt_for_command(const opt_option_t *o, unsigned int command)
{
	return o->commands == 0 || command == 0 || (o->commands & command) != 0;
}

/* "--name", or "-p" for an option known by its letter alone. */
static const char *spelling(const opt_option_t *o, char *buf, size_t len)
{
	if (o->name == NULL)
		snprintf(buf, len, "%s", o->arg);
	else if (o->name[0] == '\0')
		snprintf(buf, len, "-%c", o->letter);
	else
		snprintf(buf, len, "--%s", o->name);
	return buf;
}

/* What o's value must be, for the line that refuses one. */
static const char *wants(const opt_option_t *o, char *buf, size_t len)
{
	if (o->kind == OPT_UINT || o->kind == OPT_U64)
		snprintf(buf, len, "an integer %llu..%llu", o->imin, o->imax);
	else if (o->kind == OPT_NUMBER)
		snprintf(buf, len, "a number %g..%g", o->min, o->max);
	else
		snprintf(buf, len, "%s", o->wants != NULL ? o->wants : o->arg != NULL ? o->arg
		                                                                      : "a value");
	return buf;
}

static int parse_integer(const opt_option_t *o, const char *text, unsigned long long *v)
{
	char *end = NULL;
	errno = 0;
	if (text[0] < '0' || text[0] > '9')
		return -1;
	*v = strtoull(text, &end, 10);
	return errno != 0 || *end != '\0' || *v < o->imin || *v > o->imax ? -1 : 0;
}

static int parse_number(const opt_option_t *o, const char *text, double *v)
{
	char *end = NULL;
	errno = 0;
	*v = strtod(text, &end);
	return errno != 0 || end == text || *end != '\0' || !isfinite(*v) || *v < o->min ||
	               *v > o->max
	           ? -1
	           : 0;
}

/* Runs o's parse on text into out, or prints why not and returns -1. */
static int take_parsed(const opt_table_t *t, const opt_option_t *o, const char *text, void *out)
{
	char why[256] = "", name[64], value[128];
	int (*parse_value)(const char *, void *, char *, size_t) = o->parse;
	if (parse_value(text, out, why, sizeof why) == 0)
		return 0;
	if (why[0] != '\0')
		opt_refuse(t, "%s: %s", spelling(o, name, sizeof name), why);
	else
		opt_refuse(t, "%s needs %s, got '%s'", spelling(o, name, sizeof name), wants(o, value, sizeof value), text);
	return -1;
}

static int take_list(const opt_table_t *t, const opt_option_t *o, const char *text)
{
	char name[64], value[128];
	const char **list = (const char **)o->out;
	if (*o->count >= o->most) {
		opt_refuse(t, "%s: at most %zu", spelling(o, name, sizeof name), o->most);
		return -1;
	}
	if (o->parse != NULL) {
		if (take_parsed(t, o, text, &list[*o->count]) != 0)
			return -1;
	} else if (text[0] == '\0') {
		opt_refuse(t, "%s needs %s", spelling(o, name, sizeof name), wants(o, value, sizeof value));
		return -1;
	} else {
		list[*o->count] = text;
	}
	++*o->count;
	return 0;
}

/* Stores text as o's value, or prints why not and returns -1. */
static int take_value(const opt_table_t *t, const opt_option_t *o, const char *text)
{
	unsigned long long u;
	double d;
	char name[64], value[128];

	switch (o->kind) {
	case OPT_UINT:
	case OPT_U64:
		if (parse_integer(o, text, &u) != 0)
			break;
		if (o->kind == OPT_UINT)
			*(unsigned int *)o->out = (unsigned int)u;
		else
			*(uint64_t *)o->out = (uint64_t)u;
		return 0;
	case OPT_NUMBER:
		if (parse_number(o, text, &d) != 0)
			break;
		*(double *)o->out = d;
		return 0;
	case OPT_TEXT:
		if (text[0] == '\0') {
			opt_refuse(t, "%s needs %s", spelling(o, name, sizeof name), wants(o, value, sizeof value));
			return -1;
		}
		*(const char **)o->out = text;
		return 0;
	case OPT_FLAG:
		*(int *)o->out = 1;
		return 0;
	case OPT_PARSED:
		return take_parsed(t, o, text, o->out);
	case OPT_LIST:
		return take_list(t, o, text);
	}
	opt_refuse(t, "%s needs %s, got '%s'", spelling(o, name, sizeof name), wants(o, value, sizeof value), text);
	return -1;
}

/* The option's value from the command line: a second one of a
 * single-valued option is refused. */
static int take_given(parse_t *p, size_t i, const char *text)
{
	const opt_option_t *o = &p->t->options[i];
	char name[64];
	if (o->kind != OPT_LIST && p->seen[i]) {
		if (o->name == NULL)
			opt_refuse(p->t, "unexpected argument '%s'", text);
		else
			opt_refuse(p->t, "%s given twice (it takes one value)", spelling(o, name, sizeof name));
		return -1;
	}
	p->seen[i] = 1;
	if (take_value(p->t, o, text != NULL ? text : "") != 0)
		return -1;
	if (o->given != NULL)
		*o->given = 1;
	return 0;
}

/* An operand goes to the first operand entry with room for it. */
static int take_operand(parse_t *p, const char *text)
{
	const opt_table_t *t = p->t;
	for (size_t i = 0; i < t->n; i++) {
		const opt_option_t *o = &t->options[i];
		if (o->name != NULL || !opt_for_command(o, t->command))
			continue;
		if (o->kind == OPT_LIST || !p->seen[i])
			return take_given(p, i, text);
	}
	opt_refuse(t, "unexpected argument '%s'", text);
	return -1;
}

/* The option getopt_long could not take: unknown, its value missing, or
 * a value given to a flag. */
static void refuse_option(const opt_table_t *t, int c, char **argv)
{
	const char *arg = argv[optind - 1];
	char name[64], value[128];
	if (optopt >= FIRST_VAL && (size_t)(optopt - FIRST_VAL) < t->n) {
		const opt_option_t *o = &t->options[optopt - FIRST_VAL];
		if (c == ':')
			opt_refuse(t, "%s needs %s", spelling(o, name, sizeof name), wants(o, value, sizeof value));
		else
			opt_refuse(t, "%s takes no value", spelling(o, name, sizeof name));
		return;
	}
	for (size_t i = 0; optopt != 0 && i < t->n; i++) {
		const opt_option_t *o = &t->options[i];
		if (o->letter == optopt && c == ':') {
			opt_refuse(t, "-%c needs %s", o->letter, wants(o, value, sizeof value));
			return;
		}
	}
	if (optopt != 0 && strncmp(arg, "--", 2) == 0) /* --help=, --print-option-table= */
		opt_refuse(t, "%.*s takes no value", (int)strcspn(arg, "="), arg);
	else if (optopt != 0)
		opt_refuse(t, "unknown option '-%c'", optopt);
	else
		opt_refuse(t, "unknown option '%s'", arg);
}

/* getopt_long's tables for t->command: longopts (n + 2 entries) and the
 * short letters ("-:" first: operands in order, ':' a missing value). */
static void build_getopt(const opt_table_t *t, struct option *longopts, char *letters)
{
	size_t l = 0, k = 0;
	letters[k++] = '-';
	letters[k++] = ':';
	letters[k++] = HELP_VAL;
	for (size_t i = 0; i < t->n; i++) {
		const opt_option_t *o = &t->options[i];
		int has_arg = o->kind == OPT_FLAG ? no_argument : required_argument;
		if (o->name == NULL || !opt_for_command(o, t->command))
			continue;
		if (o->name[0] != '\0') {
			longopts[l].name = o->name;
			longopts[l].has_arg = has_arg;
			longopts[l].val = FIRST_VAL + (int)i;
			l++;
		}
		if (o->letter != 0) {
			letters[k++] = o->letter;
			if (has_arg == required_argument)
				letters[k++] = ':';
		}
	}
	letters[k] = '\0';
	longopts[l].name = "help";
	longopts[l].val = HELP_VAL;
	longopts[l + 1].name = "print-option-table";
	longopts[l + 1].val = TABLE_VAL;
}

/* The entry of short option c for t->command. */
static size_t by_letter(const opt_table_t *t, int c)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->options[i].name != NULL && t->options[i].letter == c &&
		    opt_for_command(&t->options[i], t->command))
			return i;
	return t->n;
}

/* "-n=VALUE" means VALUE, as "--name=VALUE" does. */
static const char *short_value(int c, const char *value, char **argv)
{
	const char *arg = argv[optind - 1];
	if (c < FIRST_VAL && value != NULL && value == arg + 2 && value[0] == '=')
		return value + 1;
	return value;
}

static int print_usage(const opt_table_t *t)
{
	if (t->usage == NULL)
		return OPT_HELP;
	printf("usage: %s %s\n", t->prog, t->usage);
	opt_print_help(stdout, t);
	return OPT_HELP;
}

static int run_getopt(parse_t *p, int argc, char **argv, const struct option *longopts, const char *letters)
{
	const opt_table_t *t = p->t;
	int c;
	opterr = 0;
	optind = 0; /* start afresh (glibc, the BSDs), reading letters' "-:" again */
	while ((c = getopt_long(argc, argv, letters, longopts, NULL)) != -1) {
		size_t i = c >= FIRST_VAL ? (size_t)(c - FIRST_VAL) : by_letter(t, c);
		if (c == 1) {
			if (take_operand(p, optarg) != 0)
				return OPT_REFUSED;
		} else if (c == HELP_VAL) {
			return print_usage(t);
		} else if (c == TABLE_VAL) {
			opt_print_markdown(stdout, t);
			return OPT_TABLE;
		} else if (c != '?' && c != ':' && i < t->n) {
			if (take_given(p, i, short_value(c, optarg, argv)) != 0)
				return OPT_REFUSED;
		} else {
			refuse_option(t, c, argv);
			return OPT_REFUSED;
		}
	}
	if (t->rest != NULL) {
		*t->rest = optind;
		return OPT_RUN;
	}
	for (; optind < argc; optind++)
		if (take_operand(p, argv[optind]) != 0)
			return OPT_REFUSED;
	return OPT_RUN;
}

int opt_parse(const opt_table_t *t, int argc, char **argv)
{
	struct option *longopts = calloc(t->n + 3, sizeof(*longopts));
	char *letters = calloc(2 * t->n + 4, 1);
	parse_t p = { t, calloc(t->n + 1, 1) };
	int rc = OPT_RUN;

	if (longopts == NULL || letters == NULL || p.seen == NULL) {
		opt_refuse(t, "out of memory");
		rc = OPT_REFUSED;
	}
	for (size_t i = 0; i < t->n && rc == OPT_RUN; i++) {
		const opt_option_t *o = &t->options[i];
		if (o->kind == OPT_LIST && o->count != NULL)
			*o->count = 0;
		if (o->init != NULL && take_value(t, o, o->init) != 0)
			rc = OPT_REFUSED;
	}
	if (rc == OPT_RUN) {
		build_getopt(t, longopts, letters);
		rc = run_getopt(&p, argc, argv, longopts, letters);
	}
	free(longopts);
	free(letters);
	free(p.seen);
	return rc;
}

/* "-p, --name ARG", "--name ARG" or "-p ARG" into buf, each spelling
 * between code marks ("`" for markdown). */
static const char *synopsis(char *buf, size_t len, const opt_option_t *o, const char *code)
{
	char letter[16] = "", name[80] = "";
	if (o->letter != 0)
		snprintf(letter, sizeof letter, "%s-%c%s%s", code, o->letter, code, o->name[0] ? ", " : "");
	if (o->name[0] != '\0')
		snprintf(name, sizeof name, "%s--%s%s", code, o->name, code);
	snprintf(buf, len, "%s%s%s%s", letter, name, o->arg ? " " : "", o->arg ? o->arg : "");
	return buf;
}

/* Whether o has a line in the help and the docs table of t's command. */
static int shown(const opt_table_t *t, const opt_option_t *o)
{
	return o->name != NULL && opt_for_command(o, t->command);
}

void opt_print_help(FILE *out, const opt_table_t *t)
{
	char spelled[128];
	int column = 22; /* "  --print-option-table" */
	for (size_t i = 0; i < t->n; i++)
		if (shown(t, &t->options[i])) {
			int width = 2 + (int)strlen(synopsis(spelled, sizeof spelled, &t->options[i], ""));
			if (width > column)
				column = width;
		}
	column += 2;
	for (size_t i = 0; i < t->n; i++) {
		const opt_option_t *o = &t->options[i];
		const char *line = o->help;
		if (!shown(t, o))
			continue;
		int width = fprintf(out, "  %s", synopsis(spelled, sizeof spelled, o, ""));
		for (;;) {
			const char *end = strchr(line, '\n');
			int len = end ? (int)(end - line) : (int)strlen(line);
			fprintf(out, "%*s%.*s", column - width, "", len, line);
			if (end == NULL)
				break;
			fprintf(out, "\n");
			line = end + 1;
			width = 0;
		}
		if (o->init != NULL)
			fprintf(out, " (default %s)", o->init);
		fprintf(out, "\n");
	}
	fprintf(out, "  --print-option-table%*sthe options as a markdown table\n", column - 22, "");
	fprintf(out, "  -h, --help%*sthis text\n", column - 12, "");
}

/* Text in a markdown table cell: '|' escaped, lines joined. */
static void put_cell(FILE *out, const char *text)
{
	for (; *text != '\0'; text++) {
		if (*text == '|')
			fputs("\\|", out);
		else
			fputc(*text == '\n' ? ' ' : *text, out);
	}
}

void opt_print_markdown(FILE *out, const opt_table_t *t)
{
	char spelled[128];
	fputs("| option | meaning | default |\n", out);
	fputs("| --- | --- | --- |\n", out);
	for (size_t i = 0; i < t->n; i++) {
		const opt_option_t *o = &t->options[i];
		if (!shown(t, o))
			continue;
		fprintf(out, "| %s | ", synopsis(spelled, sizeof spelled, o, "`"));
		put_cell(out, o->doc != NULL ? o->doc : o->help);
		fputs(" | ", out);
		if (o->init != NULL) {
			fputc('`', out);
			put_cell(out, o->init);
			fputc('`', out);
		}
		fputs(" |\n", out);
	}
}
