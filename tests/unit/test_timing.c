/*
 * The timing helpers of libbillingprobes (billing/timing.h): the clock is
 * read only while a probe of the pair is traced, durations are in-process
 * and monotonic, a span that began untraced reports 0 ("not measured"), and
 * a span may end on another thread.
 *
 * Linked with the static library so the helpers' semaphores are this
 * program's own and can be raised by hand, as a tracer would.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "billing/probes.h"
#include "billing/timing.h"
#include "counter_clock.h"

#if BILLING_PROBES_SDT
#  define MS 1000000ull

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	nanosleep(&ts, NULL);
}

static void test_request_duration_measured_while_traced(void **state)
{
	billing_request_t r;
	uint64_t ns;

	(void)state;
	billing_request__done_semaphore = 1;
	billing_request_begin(&r, 42, "payment.authorize");
	assert_int_not_equal(r.start_ns, 0);
	sleep_ms(20);
	ns = billing_request_end(&r, 0);
	billing_request__done_semaphore = 0;
	assert_true(ns >= 20 * MS);
	assert_true(ns < 20 * 1000 * MS); /* sanity: not garbage */
	assert_int_equal(r.request_id, 42);
	assert_string_equal(r.handler, "payment.authorize");
}

static void test_start_probe_alone_clocks_the_span(void **state)
{
	billing_transaction_t t;

	(void)state;
	/* A tracer of transaction-start only still gets a clocked span, so
	 * attaching to done a moment later measures it right. */
	billing_transaction__start_semaphore = 1;
	billing_transaction_begin(&t, 9, "invoice", 1999, "EUR");
	billing_transaction__start_semaphore = 0;
	assert_int_not_equal(t.start_ns, 0);
	billing_transaction__done_semaphore = 1;
	assert_true(billing_transaction_end(&t, 0) > 0);
	billing_transaction__done_semaphore = 0;
}

static void test_span_begun_untraced_reports_not_measured(void **state)
{
	billing_db_query_t q;

	(void)state;
	billing_db_query_begin(&q, 1, "invoice.insert");
	assert_int_equal(q.start_ns, 0); /* no clock read while untraced */
	billing_db__query__done_semaphore = 1;
	assert_int_equal(billing_db_query_end(&q, 0), 0);
	billing_db__query__done_semaphore = 0;
}

struct handoff {
	billing_gateway_call_t call;
	uint64_t ns;
};

static void *finish_on_other_thread(void *arg)
{
	struct handoff *h = arg;

	sleep_ms(10);
	h->ns = billing_gateway_call_end(&h->call, 0);
	return NULL;
}

static void test_span_handed_to_another_thread(void **state)
{
	struct handoff h;
	pthread_t thread;

	(void)state;
	billing_gateway__call__done_semaphore = 1;
	billing_gateway_call_begin(&h.call, 5, "stripe-sim", "authorize");
	assert_int_equal(pthread_create(&thread, NULL, finish_on_other_thread, &h), 0);
	assert_int_equal(pthread_join(thread, NULL), 0);
	billing_gateway__call__done_semaphore = 0;
	assert_true(h.ns >= 10 * MS);
}
#endif

static void test_untraced_end_returns_zero(void **state)
{
	billing_request_t r;

	(void)state;
	billing_request_begin(&r, 1, NULL);
	assert_int_equal(r.start_ns, 0);
	assert_int_equal(billing_request_end(&r, 500), 0);
}

static void test_clock_helpers(void **state)
{
	uint64_t a, t;

	(void)state;
	assert_int_equal(billing_clock_if(0), 0);
	a = billing_clock_if(1);
	assert_true(a != 0);
	assert_int_equal(billing_elapsed_ns(0), 0);
	assert_true(billing_elapsed_ns(a) >= 1);
	/* a billing_clock_ns() time is a start too, timed by that clock */
	t = billing_clock_ns();
	assert_true(t != 0 && billing_elapsed_ns(t) >= 1);
}

#if BILLING_PROBES_SDT
/* A span on the span clock (the time-stamp counter where the kernel keeps
 * its clock by it) against the monotonic clock around its two ends:
 * within the monotonic reads on either side (the counter's ratio adds a
 * clock read's jitter, a microsecond at most), whatever the wait. */
static void test_span_clock_agrees_with_monotonic(void **state)
{
	(void)state;
	assert_int_equal(billing_clock_if(1) >> 63, counter_clock_trusted());
	for (int i = 0; i < 4; i++) {
		uint64_t before_start = billing_clock_ns(), mark = billing_clock_if(1), after_start = billing_clock_ns();
		sleep_ms(1 + 7 * i);
		uint64_t before_end = billing_clock_ns(), span = billing_elapsed_ns(mark), after_end = billing_clock_ns();
		print_message("span %llu ns, between %llu and %llu\n", (unsigned long long)span,
		              (unsigned long long)(before_end - after_start), (unsigned long long)(after_end - before_start));
		assert_true(span + 1000 >= before_end - after_start);
		assert_true(span <= after_end - before_start + 1000);
	}
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#if BILLING_PROBES_SDT
		cmocka_unit_test(test_request_duration_measured_while_traced),
		cmocka_unit_test(test_start_probe_alone_clocks_the_span),
		cmocka_unit_test(test_span_begun_untraced_reports_not_measured),
		cmocka_unit_test(test_span_handed_to_another_thread),
		cmocka_unit_test(test_span_clock_agrees_with_monotonic),
#endif
		cmocka_unit_test(test_untraced_end_returns_zero),
		cmocka_unit_test(test_clock_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
