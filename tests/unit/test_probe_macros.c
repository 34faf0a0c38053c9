/*
 * The probe macros of billing/probes.h, seen from the application:
 * arguments evaluated only while traced, is-enabled checks, the type checks
 * that must compile, and a build of the same file without probes.
 *
 * "Traced" is simulated by raising a probe's semaphore by hand, which is
 * what a tracer does (bpftrace -p/-c, DTrace); the probe site itself is a
 * nop, so firing it with nobody attached is harmless.  tests/live fires
 * the same macros under a real bpftrace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "billing/probes.h"
#include "counted_args.h"

#if BILLING_PROBES_SDT && !defined(BILLING_PROBES_DISABLE)
#  define HAVE_SEMAPHORES 1
#  define SET_TRACED(sem, on) ((sem) = (unsigned short)((on) ? 1 : 0))
#else
#  define HAVE_SEMAPHORES 0
#endif

static void test_arguments_not_evaluated_while_untraced(void **state)
{
	int i;

	(void)state;
	evaluations = 0;
	for (i = 0; i < 100; i++) {
		BILLING_PAYMENT_AUTH(counted_id(7), 1999, counted_string("EUR"),
		                     counted_string("stripe-sim"), 0, counted_id(5));
		BILLING_ERROR(counted_id(1), counted_string("db"), 3);
	}
	assert_int_equal(evaluations, 0);
	assert_false(BILLING_PAYMENT_AUTH_ENABLED());
	assert_false(BILLING_ERROR_ENABLED());
}

static void test_arguments_evaluated_once_per_fire_while_traced(void **state)
{
	int i;

	(void)state;
	evaluations = 0;
#if HAVE_SEMAPHORES
	SET_TRACED(billing_payment__auth_semaphore, 1);
#endif
	for (i = 0; i < 100; i++)
		BILLING_PAYMENT_AUTH(counted_id(7), 1999, counted_string("EUR"),
		                     counted_string("stripe-sim"), 0, counted_id(5));
#if HAVE_SEMAPHORES
	assert_true(BILLING_PAYMENT_AUTH_ENABLED());
	/* Only the traced probe evaluates its arguments. */
	assert_false(BILLING_INVOICE_CREATE_ENABLED());
	assert_int_equal(evaluations, 4 * 100);
	SET_TRACED(billing_payment__auth_semaphore, 0);
	assert_false(BILLING_PAYMENT_AUTH_ENABLED());
#else
	/* Compiled out: nothing can raise the probe, nothing is evaluated. */
	assert_false(BILLING_PAYMENT_AUTH_ENABLED());
	assert_int_equal(evaluations, 0);
#endif
}

static void test_null_strings_are_accepted(void **state)
{
	const char *none = NULL;

	(void)state;
#if HAVE_SEMAPHORES
	SET_TRACED(billing_refund__process_semaphore, 1);
#endif
	/* Reaches the consumer as "" (asserted under bpftrace in tests/live). */
	BILLING_REFUND_PROCESS(1, 2, 300, none, none);
	BILLING_REQUEST_START(1, NULL);
	assert_string_equal(BILLING_PROBE_STR_(none), "");
	assert_string_equal(BILLING_PROBE_STR_("EUR"), "EUR");
#if HAVE_SEMAPHORES
	SET_TRACED(billing_refund__process_semaphore, 0);
#endif
}

static void test_integer_arguments_of_every_width(void **state)
{
	/* All of these must compile without a warning under -Wall -Wextra
	 * -Werror -pedantic: integers of any width and signedness, enums,
	 * characters and bools convert to the probe's type. */
	enum { CODE = 42 };
	unsigned char small = 3;
	short s = -2;
	long l = -5;
	unsigned long long big = 18446744073709551615ull;
	char c = 'x';

	(void)state;
	evaluations = 0;
	BILLING_ERROR(big, "validation", CODE);
	BILLING_ERROR(small, "validation", s);
	BILLING_INVOICE_CREATE(l, c, -1999, "USD");
	BILLING_TRANSACTION_DONE(1u, "refund", (1 == 1), 0);
	assert_int_equal(evaluations, 0);
}

static void test_probes_in_statement_positions(void **state)
{
	int fired = 0;

	(void)state;
	/* Each macro is one statement: safe in an unbraced if/else. */
	if (fired)
		BILLING_REQUEST_START(1, "h");
	else
		BILLING_REQUEST_DONE(1, "h", 0, 10);
	for (fired = 0; fired < 3; fired++)
		BILLING_DB_QUERY_START(1, "invoice.insert");
	assert_int_equal(fired, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arguments_not_evaluated_while_untraced),
		cmocka_unit_test(test_arguments_evaluated_once_per_fire_while_traced),
		cmocka_unit_test(test_null_strings_are_accepted),
		cmocka_unit_test(test_integer_arguments_of_every_width),
		cmocka_unit_test(test_probes_in_statement_positions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
