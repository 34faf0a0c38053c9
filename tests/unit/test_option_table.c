/* The option table (tools/options): values stored, operands in order,
 * and every refusal one line naming the option; --help and the docs'
 * table list exactly the table's options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "option_table.h"

enum { COMMAND_A = 1,
       COMMAND_B = 2 };

static struct parsed {
	int verbose;
	const char *path;
	unsigned int count;
	double rate;
	uint64_t seed;
	const char *items[3];
	size_t item_count;
	const char *operands[4];
	size_t operand_count;
	int color;
	int only_a;
} got;

static int parse_color(const char *text, void *out, char *why, size_t whylen)
{
	if (strcmp(text, "red") == 0) {
		*(int *)out = 1;
		return 0;
	}
	if (strcmp(text, "mauve") == 0)
		snprintf(why, whylen, "no such color %s", text);
	return -1;
}

static const opt_option_t options[] = {
	{ "verbose", NULL, OPT_FLAG, &got.verbose, .letter = 'v', .help = "say more" },
	{ "path", "FILE", OPT_TEXT, &got.path, .letter = 'p', .wants = "a file", .help = "read FILE" },
	{ "count", "N", OPT_UINT, &got.count, .imin = 1, .imax = 100, .init = "5", .help = "stop after N" },
	{ "rate", "R", OPT_NUMBER, &got.rate, .min = 0, .max = 1, .help = "a fraction\nof them" },
	{ "seed", "N", OPT_U64, &got.seed, .imax = UINT64_MAX, .help = "seed" },
	{ "item", "X", OPT_LIST, got.items, .most = 3, .count = &got.item_count, .help = "an item | more" },
	{ "color", "C", OPT_PARSED, &got.color, .parse = parse_color, .wants = "red", .help = "a color" },
	{ "only-a", NULL, OPT_FLAG, &got.only_a, .commands = COMMAND_A, .help = "command A's" },
	{ NULL, "OPERAND", OPT_LIST, got.operands, .most = 4, .count = &got.operand_count },
};

static char err_lines[1024];

static void keep_line(const opt_table_t *t, const char *line)
{
	size_t used = strlen(err_lines);
	snprintf(err_lines + used, sizeof err_lines - used, "%s: %s\n", t->prog, line);
}

static opt_table_t table = { .prog = "prog", .options = options, .n = sizeof options / sizeof options[0], .report = keep_line };

/* Parses argv (NULL-terminated) as command (0: every option). */
static int parse_as(unsigned int command, char **argv)
{
	int argc = 0;
	while (argv[argc] != NULL)
		argc++;
	memset(&got, 0, sizeof got);
	err_lines[0] = '\0';
	table.command = command;
	return opt_parse(&table, argc, argv);
}

static int count_lines(const char *text)
{
	int lines = 0;
	for (; *text != '\0'; text++)
		lines += *text == '\n';
	return lines;
}

static void assert_refused(char **argv, const char *says)
{
	assert_int_equal(parse_as(0, argv), OPT_REFUSED);
	assert_int_equal(count_lines(err_lines), 1);
	if (strstr(err_lines, says) == NULL)
		fail_msg("wanted '%s' in '%s'", says, err_lines);
}

static void test_values_stored(void **state)
{
	(void)state;
	char *argv[] = { "prog", "-v", "first", "-p=a.txt", "--count=7", "--rate", "0.25",
		         "--seed", "18446744073709551615", "--item", "x", "--item=y", "--color", "red",
		         "second", NULL };
	assert_int_equal(parse_as(0, argv), OPT_RUN);
	assert_string_equal(err_lines, "");
	assert_int_equal(got.verbose, 1);
	assert_string_equal(got.path, "a.txt");
	assert_int_equal(got.count, 7);
	assert_true(got.rate == 0.25);
	assert_true(got.seed == UINT64_MAX);
	assert_int_equal(got.item_count, 2);
	assert_string_equal(got.items[1], "y");
	assert_int_equal(got.color, 1);
	assert_int_equal(got.operand_count, 2);
	assert_string_equal(got.operands[0], "first");
	assert_string_equal(got.operands[1], "second");
}

static void test_default_kept(void **state)
{
	(void)state;
	char *argv[] = { "prog", NULL };
	assert_int_equal(parse_as(0, argv), OPT_RUN);
	assert_int_equal(got.count, 5);
}

static void test_double_dash_ends_options(void **state)
{
	(void)state;
	char *argv[] = { "prog", "--", "-v", NULL };
	assert_int_equal(parse_as(0, argv), OPT_RUN);
	assert_int_equal(got.verbose, 0);
	assert_int_equal(got.operand_count, 1);
	assert_string_equal(got.operands[0], "-v");
}

static void test_rest_left_to_caller(void **state)
{
	(void)state;
	int rest = -1;
	char *argv[] = { "prog", "a", "--", "b", "-v", NULL };
	table.rest = &rest;
	assert_int_equal(parse_as(0, argv), OPT_RUN);
	table.rest = NULL;
	assert_int_equal(rest, 3);
	assert_int_equal(got.operand_count, 1);
	assert_int_equal(got.verbose, 0);
}

static void test_unknown_refused(void **state)
{
	(void)state;
	char *argv[] = { "prog", "--nope", NULL };
	assert_refused(argv, "prog: unknown option '--nope'");
	char *letter[] = { "prog", "-x", NULL };
	assert_refused(letter, "prog: unknown option '-x'");
}

static void test_other_commands_option_refused(void **state)
{
	(void)state;
	char *argv[] = { "prog", "--only-a", NULL };
	assert_int_equal(parse_as(COMMAND_B, argv), OPT_REFUSED);
	assert_non_null(strstr(err_lines, "unknown option '--only-a'"));
	assert_int_equal(parse_as(COMMAND_A, argv), OPT_RUN);
	assert_int_equal(got.only_a, 1);
}

static void test_missing_value_refused(void **state)
{
	(void)state;
	char *argv[] = { "prog", "--path", NULL };
	assert_refused(argv, "prog: --path needs a file");
	char *letter[] = { "prog", "-p", NULL };
	assert_refused(letter, "prog: -p needs a file");
	char *empty[] = { "prog", "--path=", NULL };
	assert_refused(empty, "prog: --path needs a file");
}

static void test_repeated_refused(void **state)
{
	(void)state;
	char *argv[] = { "prog", "-p", "a", "--path", "b", NULL };
	assert_refused(argv, "prog: --path given twice");
	char *flag[] = { "prog", "-v", "--verbose", NULL };
	assert_refused(flag, "prog: --verbose given twice");
}

static void test_out_of_range_refused(void **state)
{
	(void)state;
	char *argv[] = { "prog", "--count", "101", NULL };
	assert_refused(argv, "prog: --count needs an integer 1..100, got '101'");
	char *zero[] = { "prog", "--count", "0", NULL };
	assert_refused(zero, "--count needs an integer 1..100, got '0'");
	char *rate[] = { "prog", "--rate", "1.5", NULL };
	assert_refused(rate, "prog: --rate needs a number 0..1, got '1.5'");
	char *items[] = { "prog", "--item", "a", "--item", "b", "--item", "c", "--item", "d", NULL };
	assert_refused(items, "prog: --item: at most 3");
}

static void test_malformed_refused(void **state)
{
	(void)state;
	char *argv[] = { "prog", "--count", "7x", NULL };
	assert_refused(argv, "--count needs an integer 1..100, got '7x'");
	char *negative[] = { "prog", "--seed", "-1", NULL };
	assert_refused(negative, "--seed needs an integer 0..18446744073709551615, got '-1'");
	char *too_big[] = { "prog", "--seed", "18446744073709551616", NULL };
	assert_refused(too_big, "--seed needs an integer");
	char *nan[] = { "prog", "--rate", "nan", NULL };
	assert_refused(nan, "--rate needs a number");
	char *color[] = { "prog", "--color", "blue", NULL };
	assert_refused(color, "prog: --color needs red, got 'blue'");
	char *why[] = { "prog", "--color", "mauve", NULL };
	assert_refused(why, "prog: --color: no such color mauve");
}

static void test_flag_with_value_refused(void **state)
{
	(void)state;
	char *argv[] = { "prog", "--verbose=1", NULL };
	assert_refused(argv, "prog: --verbose takes no value");
	char *help[] = { "prog", "--help=1", NULL };
	assert_refused(help, "prog: --help takes no value");
	char *table[] = { "prog", "--print-option-table=x", NULL };
	assert_refused(table, "prog: --print-option-table takes no value");
}

static void test_operand_without_room_refused(void **state)
{
	(void)state;
	char *argv[] = { "prog", "a", "b", "c", "d", "e", NULL };
	assert_refused(argv, "prog: OPERAND: at most 4");
}

static void test_help_asked(void **state)
{
	(void)state;
	char *argv[] = { "prog", "-v", "--help", "--nope", NULL };
	assert_int_equal(parse_as(0, argv), OPT_HELP);
	assert_string_equal(err_lines, "");
	char *letter[] = { "prog", "-h", NULL };
	assert_int_equal(parse_as(0, letter), OPT_HELP);
}

static void test_table_asked(void **state)
{
	(void)state;
	char *argv[] = { "prog", "--print-option-table", NULL };
	FILE *saved = stdout;
	stdout = tmpfile();
	assert_non_null(stdout);
	int rc = parse_as(0, argv);
	fclose(stdout);
	stdout = saved;
	assert_int_equal(rc, OPT_TABLE);
	assert_string_equal(err_lines, "");
}

static char *printed(void (*print)(FILE *, const opt_table_t *))
{
	static char text[4096];
	FILE *out = tmpfile();
	assert_non_null(out);
	print(out, &table);
	rewind(out);
	text[fread(text, 1, sizeof text - 1, out)] = '\0';
	fclose(out);
	return text;
}

/* --help and the docs' table list exactly the command's options. */
static void test_help_and_markdown_list_every_option(void **state)
{
	(void)state;
	table.command = COMMAND_B;
	const char *help = printed(opt_print_help);
	assert_non_null(strstr(help, "  -v, --verbose "));
	assert_non_null(strstr(help, "  --count N "));
	assert_non_null(strstr(help, "stop after N (default 5)\n"));
	assert_non_null(strstr(help, "a fraction\n"));
	assert_non_null(strstr(help, "  -h, --help "));
	assert_null(strstr(help, "only-a"));
	assert_null(strstr(help, "OPERAND"));
	assert_non_null(strstr(help, "  --print-option-table "));
	/* one line each, the rate's two, --print-option-table's and --help's */
	assert_int_equal(count_lines(help), 7 + 1 + 2);

	const char *doc = printed(opt_print_markdown);
	assert_non_null(strstr(doc, "| `-v`, `--verbose` | say more |  |\n"));
	assert_non_null(strstr(doc, "| `--count` N | stop after N | `5` |\n"));
	assert_non_null(strstr(doc, "| `--rate` R | a fraction of them |  |\n"));
	assert_non_null(strstr(doc, "| `--item` X | an item \\| more |  |\n"));
	assert_null(strstr(doc, "only-a"));
	assert_int_equal(count_lines(doc), 2 + 7);
	table.command = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_stored),
		cmocka_unit_test(test_default_kept),
		cmocka_unit_test(test_double_dash_ends_options),
		cmocka_unit_test(test_rest_left_to_caller),
		cmocka_unit_test(test_unknown_refused),
		cmocka_unit_test(test_other_commands_option_refused),
		cmocka_unit_test(test_missing_value_refused),
		cmocka_unit_test(test_repeated_refused),
		cmocka_unit_test(test_out_of_range_refused),
		cmocka_unit_test(test_malformed_refused),
		cmocka_unit_test(test_flag_with_value_refused),
		cmocka_unit_test(test_operand_without_room_refused),
		cmocka_unit_test(test_help_asked),
		cmocka_unit_test(test_table_asked),
		cmocka_unit_test(test_help_and_markdown_list_every_option),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
