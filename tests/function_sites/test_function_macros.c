/*
 * Function probe sites seen from the application (-Dprobe_site=function;
 * function_sites_dep forces them for this program in any build): each
 * macro is one call of billing_fire_<probe>() with the probe's arguments in
 * order, evaluated once per fire because nothing can say "untraced"
 * (BILLING_<PROBE>_ENABLED() is 1), NULL strings passed as "", and the
 * timing helpers clock every span.
 *
 * The linker's --wrap (meson.build) puts a recorder in front of four
 * function sites: calls of billing_fire_X reach __wrap_billing_fire_X
 * here, which records its arguments and calls the real site.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "billing/probes.h"
#include "counted_args.h"
#include "billing/timing.h"

#if !defined(BILLING_PROBE_SITE_FORCE_FUNCTION) && !BILLING_PROBE_SITE_FUNCTION
#  error "this test is built with function_sites_dep (BILLING_PROBE_SITE_FORCE_FUNCTION)"
#endif

/* --- the recorder --------------------------------------------------------- */

void __real_billing_fire_payment_auth(uint64_t, int64_t, const char *, const char *, int32_t, uint64_t);
void __wrap_billing_fire_payment_auth(uint64_t, int64_t, const char *, const char *, int32_t, uint64_t);
void __real_billing_fire_refund_process(uint64_t, uint64_t, int64_t, const char *, const char *);
void __wrap_billing_fire_refund_process(uint64_t, uint64_t, int64_t, const char *, const char *);
void __real_billing_fire_error(uint64_t, const char *, int32_t);
void __wrap_billing_fire_error(uint64_t, const char *, int32_t);
void __real_billing_fire_request_done(uint64_t, const char *, int32_t, uint64_t);
void __wrap_billing_fire_request_done(uint64_t, const char *, int32_t, uint64_t);

static struct {
	int calls;
	uint64_t u[2];
	int64_t amount;
	const char *s[2];
	int32_t code;
	uint64_t ns;
} seen;

static void forget(void)
{
	memset(&seen, 0, sizeof seen);
}

void __wrap_billing_fire_payment_auth(uint64_t payment_id, int64_t amount_minor, const char *currency,
                                      const char *gateway, int32_t result, uint64_t duration_ns)
{
	seen.calls++;
	seen.u[0] = payment_id;
	seen.amount = amount_minor;
	seen.s[0] = currency;
	seen.s[1] = gateway;
	seen.code = result;
	seen.ns = duration_ns;
	__real_billing_fire_payment_auth(payment_id, amount_minor, currency, gateway, result, duration_ns);
}

void __wrap_billing_fire_refund_process(uint64_t refund_id, uint64_t payment_id, int64_t amount_minor,
                                        const char *currency, const char *reason)
{
	seen.calls++;
	seen.u[0] = refund_id;
	seen.u[1] = payment_id;
	seen.amount = amount_minor;
	seen.s[0] = currency;
	seen.s[1] = reason;
	__real_billing_fire_refund_process(refund_id, payment_id, amount_minor, currency, reason);
}

void __wrap_billing_fire_error(uint64_t request_id, const char *component, int32_t code)
{
	seen.calls++;
	seen.u[0] = request_id;
	seen.s[0] = component;
	seen.code = code;
	__real_billing_fire_error(request_id, component, code);
}

void __wrap_billing_fire_request_done(uint64_t request_id, const char *handler, int32_t status,
                                      uint64_t duration_ns)
{
	seen.calls++;
	seen.u[0] = request_id;
	seen.s[0] = handler;
	seen.code = status;
	seen.ns = duration_ns;
	__real_billing_fire_request_done(request_id, handler, status, duration_ns);
}

/* --- the tests ------------------------------------------------------------- */

static void test_every_fire_is_one_call_with_its_arguments_in_order(void **state)
{
	int i;

	(void)state;
	forget();
	evaluations = 0;
	for (i = 0; i < 100; i++)
		BILLING_PAYMENT_AUTH(counted_id(7), -1999, counted_string("EUR"),
		                     counted_string("stripe-sim"), -51, counted_id(18446744073709551615ull));
	/* No semaphore: a function site is always "enabled", so its arguments
	 * are evaluated at every fire, exactly once. */
	assert_int_equal(seen.calls, 100);
	assert_int_equal(evaluations, 4 * 100);
	assert_int_equal(seen.u[0], 7);
	assert_int_equal(seen.amount, -1999);
	assert_string_equal(seen.s[0], "EUR");
	assert_string_equal(seen.s[1], "stripe-sim");
	assert_int_equal(seen.code, -51);
	assert_true(seen.ns == 18446744073709551615ull);
}

static void test_is_enabled_is_always_true(void **state)
{
	char component[32];

	(void)state;
	assert_true(BILLING_PAYMENT_AUTH_ENABLED());
	assert_true(BILLING_ERROR_ENABLED());
	assert_true(billing_enabled_payment_auth());
	/* So work behind an explicit guard always runs, too. */
	forget();
	if (BILLING_ERROR_ENABLED()) {
		snprintf(component, sizeof component, "shard-%d", 3);
		BILLING_ERROR(0, component, 409);
	}
	assert_int_equal(seen.calls, 1);
	assert_string_equal(seen.s[0], "shard-3");
	assert_int_equal(seen.code, 409);
}

static void test_null_strings_reach_the_site_as_empty(void **state)
{
	const char *none = NULL;

	(void)state;
	forget();
	/* copyinstr(NULL) faults in the tracer: the site never sees NULL. */
	BILLING_REFUND_PROCESS(11, 22, 300, none, none);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.u[0], 11);
	assert_int_equal(seen.u[1], 22);
	assert_int_equal(seen.amount, 300);
	assert_non_null(seen.s[0]);
	assert_non_null(seen.s[1]);
	assert_string_equal(seen.s[0], "");
	assert_string_equal(seen.s[1], "");
}

static void test_timing_helpers_clock_every_span(void **state)
{
	billing_request_t r;
	struct timespec ms = { 0, 2000000 };
	uint64_t ns;

	(void)state;
	forget();
	/* Nothing tells a function-site build it is traced, so the clock is
	 * read at every begin and end: durations are never 0. */
	billing_request_begin(&r, 42, "payment.authorize");
	assert_int_not_equal(r.start_ns, 0);
	nanosleep(&ms, NULL);
	ns = billing_request_end(&r, 201);
	assert_true(ns >= 2000000);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.u[0], 42);
	assert_string_equal(seen.s[0], "payment.authorize");
	assert_int_equal(seen.code, 201);
	assert_true(seen.ns == ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_fire_is_one_call_with_its_arguments_in_order),
		cmocka_unit_test(test_is_enabled_is_always_true),
		cmocka_unit_test(test_null_strings_reach_the_site_as_empty),
		cmocka_unit_test(test_timing_helpers_clock_every_span),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
