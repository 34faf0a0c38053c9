/*
 * The run-time catalogue (billing/catalogue.h) against the probe contract:
 * the probes and argument orders every consumer relies on.  The catalogue
 * is generated from billing.d, so this pins billing.d itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "billing/catalogue.h"
#include "billing/probes_config.h"

struct expected_probe {
	const char *name;
	const char *args; /* "type name, ..." */
};

static const struct expected_probe contract[] = {
	{ "request-start", "uint64 request_id, string handler" },
	{ "request-done", "uint64 request_id, string handler, int32 status, uint64 duration_ns" },
	{ "transaction-start", "uint64 tx_id, string kind, int64 amount_minor, string currency" },
	{ "transaction-done", "uint64 tx_id, string kind, int32 status, uint64 duration_ns" },
	{ "invoice-create", "uint64 invoice_id, uint64 customer_id, int64 amount_minor, string currency" },
	{ "payment-auth", "uint64 payment_id, int64 amount_minor, string currency, string gateway, "
	                  "int32 result, uint64 duration_ns" },
	{ "refund-process", "uint64 refund_id, uint64 payment_id, int64 amount_minor, string currency, "
	                    "string reason" },
	{ "error", "uint64 request_id, string component, int32 code" },
	{ "db-query-start", "uint64 request_id, string operation" },
	{ "db-query-done", "uint64 request_id, string operation, int32 status, uint64 duration_ns" },
	{ "gateway-call-start", "uint64 request_id, string gateway, string operation" },
	{ "gateway-call-done", "uint64 request_id, string gateway, string operation, int32 status, "
	                       "uint64 duration_ns" },
};

static void
render_args(const billing_probe_info_t *p, char *buf, size_t size)
{
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < p->nargs; i++) {
		const char *type = billing_arg_type_name(p->args[i].type);
		size_t need = strlen(type) + strlen(p->args[i].name) + 3;
		assert_true(used + need < size);
		if (i > 0) {
			strcpy(buf + used, ", ");
			used += 2;
		}
		used += (size_t)sprintf(buf + used, "%s %s", type, p->args[i].name);
	}
}

static void
test_catalogue_matches_the_contract(void **state)
{
	size_t count, i;
	const billing_probe_info_t *probes = billing_catalogue(&count);
	char rendered[512];

	(void)state;
	assert_string_equal(billing_catalogue_provider(), "billing");
	assert_int_equal(count, sizeof contract / sizeof contract[0]);
	for (i = 0; i < count; i++) {
		assert_string_equal(probes[i].name, contract[i].name);
		render_args(&probes[i], rendered, sizeof rendered);
		assert_string_equal(rendered, contract[i].args);
		assert_true(probes[i].nargs <= 6); /* bpftrace reads arg0..arg5 */
		assert_true(strlen(probes[i].summary) > 10);
	}
}

static void
test_every_argument_is_documented(void **state)
{
	size_t count, i, j;
	const billing_probe_info_t *probes = billing_catalogue(&count);

	(void)state;
	for (i = 0; i < count; i++)
		for (j = 0; j < probes[i].nargs; j++)
			assert_true(strlen(probes[i].args[j].doc) > 5);
}

static void
test_find_by_either_spelling(void **state)
{
	const billing_probe_info_t *p;

	(void)state;
	p = billing_catalogue_find("payment-auth");
	assert_non_null(p);
	assert_string_equal(p->sdt_name, "payment__auth");
	assert_ptr_equal(billing_catalogue_find("payment__auth"), p);
	assert_ptr_equal(billing_catalogue_find("gateway__call__done"), billing_catalogue_find("gateway-call-done"));
	assert_null(billing_catalogue_find("payment"));
	assert_null(billing_catalogue_find(""));
	assert_null(billing_catalogue_find(NULL));
}

static void
test_compiled_in_flag_matches_build(void **state)
{
	(void)state;
	assert_int_equal(billing_probes_compiled_in(), BILLING_PROBES_SDT);
	assert_string_equal(billing_arg_type_name(BILLING_ARG_INT64), "int64");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_catalogue_matches_the_contract),
		cmocka_unit_test(test_every_argument_is_documented),
		cmocka_unit_test(test_find_by_either_spelling),
		cmocka_unit_test(test_compiled_in_flag_matches_build),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
