/*
 * The run-time catalogue (billing/catalogue.h): every entry described,
 * lookup by either spelling, the build flag.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "billing/catalogue.h"
#include "billing/probes_config.h"

/* That the catalogue lists billing.d's probes with their types is
 * test_catalogue_matches.py's job; here, what every entry must hold. */
static void test_every_probe_is_described(void **state)
{
	size_t count, i;
	const billing_probe_info_t *probes = billing_catalogue(&count);

	(void)state;
	assert_string_equal(billing_catalogue_provider(), "billing");
	assert_true(count > 0);
	for (i = 0; i < count; i++) {
		assert_non_null(probes[i].name);
		assert_ptr_equal(billing_catalogue_find(probes[i].sdt_name), &probes[i]);
		assert_true(probes[i].nargs <= 6); /* bpftrace reads arg0..arg5 */
		assert_true(strlen(probes[i].summary) > 10);
	}
}

static void test_every_argument_is_documented(void **state)
{
	size_t count, i, j;
	const billing_probe_info_t *probes = billing_catalogue(&count);

	(void)state;
	for (i = 0; i < count; i++)
		for (j = 0; j < probes[i].nargs; j++)
			assert_true(strlen(probes[i].args[j].doc) > 5);
}

static void test_find_by_either_spelling(void **state)
{
	size_t count, i;
	const billing_probe_info_t *probes = billing_catalogue(&count);
	char prefix[64];

	(void)state;
	for (i = 0; i < count; i++) {
		assert_ptr_equal(billing_catalogue_find(probes[i].name), &probes[i]);
		assert_ptr_equal(billing_catalogue_find(probes[i].sdt_name), &probes[i]);
	}
	/* A prefix of a name is not a name. */
	assert_true(strlen(probes[0].name) > 1 && strlen(probes[0].name) < sizeof prefix);
	strcpy(prefix, probes[0].name);
	prefix[strlen(prefix) - 1] = '\0';
	assert_null(billing_catalogue_find(prefix));
	assert_null(billing_catalogue_find(""));
	assert_null(billing_catalogue_find(NULL));
}

static void test_compiled_in_flag_matches_build(void **state)
{
	(void)state;
	assert_int_equal(billing_probes_compiled_in(), BUILT_WITH_PROBES);
	assert_string_equal(billing_arg_type_name(BILLING_ARG_INT64), "int64");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_probe_is_described),
		cmocka_unit_test(test_every_argument_is_documented),
		cmocka_unit_test(test_find_by_either_spelling),
		cmocka_unit_test(test_compiled_in_flag_matches_build),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
