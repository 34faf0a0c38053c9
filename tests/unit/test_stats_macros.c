/*
 * The probe macros and timing helpers in a stats build (BILLING_STATS_FORCE,
 * linked with the stats writer), run by meson twice: "on" (the stats count)
 * and "off" (BILLING_STATS=off in the environment).
 *
 * A stats-fed probe's BILLING_<PROBE>_ENABLED() is true while the stats are
 * on, traced or not, so a duration guarded by it is clocked; with the stats
 * off it is the semaphore alone again, as is every other probe's always.
 * Arguments are evaluated once per fire (counted and traced: still once),
 * and not at all while the probe is neither traced nor counted.  The clock
 * is read only when a probe wants it: clock_gettime is wrapped (the linker's
 * --wrap) to count the monotonic reads of the helpers and billing_clock_if;
 * where spans are timed by the time-stamp counter (their start has its top
 * bit set), a thousand spans read the monotonic clock a few times, not
 * twice each.
 *
 * "Traced" is a semaphore raised by hand, as in test_probe_macros.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "billing/probe_samples.h"
#include "billing/probes.h"
#include "billing/timing.h"
#include "counted_args.h"
#include "counter_clock.h"

#if !BILLING_PROBES_SDT
#  error "test_stats_macros raises semaphores: build it with USDT probes"
#endif

static int stats_on; /* what this run expects: argv[1] is "on" or "off" */
static int clock_reads;

int __real_clock_gettime(clockid_t clock, struct timespec *ts);

int __wrap_clock_gettime(clockid_t clock, struct timespec *ts)
{
	if (clock == CLOCK_MONOTONIC)
		clock_reads++;
	return __real_clock_gettime(clock, ts);
}

static void test_stats_state_is_the_environments(void **state)
{
	(void)state;
	assert_int_equal(BILLING_STATS_ON_(), stats_on);
}

static void test_enabled_is_traced_or_counted(void **state)
{
	const char *name;
	int feeds, enabled;

	(void)state;
	for (int i = 0; i < BILLING_SAMPLE_PROBES; i++) {
		enabled = billing_sample_enabled(i, &name, &feeds);
		print_message("%-20s feeds stats %d, enabled untraced %d\n", name, feeds, enabled);
		/* request-start opens a slow-request trail; no request is open here */
		assert_int_equal(enabled, (feeds || strcmp(name, "request-start") == 0) && stats_on);
	}
	billing_transaction__start_semaphore = 1;
	assert_true(BILLING_TRANSACTION_START_ENABLED());
	billing_transaction__start_semaphore = 0;
}

static void fire_payments(int n)
{
	for (int i = 0; i < n; i++)
		BILLING_PAYMENT_AUTH(counted_id(7), 1999, counted_string("EUR"), counted_string("stripe-sim"), 0,
		                     counted_id(5));
}

static void test_fed_probe_arguments_evaluated_once(void **state)
{
	(void)state;
	evaluations = 0;
	fire_payments(100);
	assert_int_equal(evaluations, stats_on ? 4 * 100 : 0);
	/* Counted and fired: the arguments still once per fire. */
	billing_payment__auth_semaphore = 1;
	evaluations = 0;
	fire_payments(100);
	billing_payment__auth_semaphore = 0;
	assert_int_equal(evaluations, 4 * 100);
}

static void test_unfed_probe_untraced_costs_nothing(void **state)
{
	(void)state;
	evaluations = 0;
	clock_reads = 0;
	BILLING_TRANSACTION_START(counted_id(1), counted_string("invoice"), 1999, counted_string("EUR"));
	assert_int_equal(billing_clock_if(BILLING_TRANSACTION_START_ENABLED()), 0);
	assert_int_equal(evaluations, 0);
	assert_int_equal(clock_reads, 0);
}

static void test_readme_pattern_clocks_while_counted(void **state)
{
	uint64_t t0;

	(void)state;
	clock_reads = 0;
	t0 = billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED());
	BILLING_PAYMENT_AUTH(1, 1999, "EUR", "stripe-sim", 0, billing_elapsed_ns(t0));
	assert_int_equal(t0 != 0, stats_on);
	assert_true(stats_on ? clock_reads <= 2 : clock_reads == 0);
}

static void test_helpers_clock_while_counted(void **state)
{
	billing_request_t r;
	uint64_t ns;

	(void)state;
	clock_reads = 0;
	billing_request_begin(&r, 42, "payment.authorize");
	ns = billing_request_end(&r, 0);
	assert_int_equal(r.start_ns != 0, stats_on);
	assert_int_equal(ns != 0, stats_on);
	assert_true(stats_on ? clock_reads <= 2 : clock_reads == 0);
}

/* Spans on the time-stamp counter read the monotonic clock only to keep
 * the counter's ratio: when the process has doubled its age since the
 * last reading, and at most every 2^32 ticks after. */
static void test_counter_spans_read_the_clock_rarely(void **state)
{
	billing_request_t r;
	int counted = 0;

	(void)state;
	if (!stats_on || !counter_clock_trusted()) {
		print_message("the stats are off, or the kernel does not keep its clock by the counter here\n");
		return;
	}
	assert_true(billing_clock_if(1) >> 63); /* a span starts on the counter */
	clock_reads = 0;
	for (int i = 0; i < 1000; i++) {
		billing_request_begin(&r, 42, "payment.authorize");
		counted += billing_request_end(&r, 0) != 0;
	}
	print_message("1000 spans, %d monotonic clock reads\n", clock_reads);
	assert_int_equal(counted, 1000);
	assert_true(clock_reads <= 40);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_state_is_the_environments),
		cmocka_unit_test(test_enabled_is_traced_or_counted),
		cmocka_unit_test(test_fed_probe_arguments_evaluated_once),
		cmocka_unit_test(test_unfed_probe_untraced_costs_nothing),
		cmocka_unit_test(test_readme_pattern_clocks_while_counted),
		cmocka_unit_test(test_helpers_clock_while_counted),
		cmocka_unit_test(test_counter_spans_read_the_clock_rarely),
	};

	if (argc != 2 || (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0)) {
		fprintf(stderr, "usage: test_stats_macros on|off (the stats this run expects)\n");
		return 2;
	}
	stats_on = strcmp(argv[1], "on") == 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
