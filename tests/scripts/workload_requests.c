/*
 * workload_requests.c -- scripts-workload's per-request modes: requests,
 * bounds and burst (workload.c describes them; expected.py holds their
 * figures).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>

#include "billing/probe_functions.h"
#include "workload.h"

/* --- requests ------------------------------------------------------------ */

/* Two handlers on two threads at once.  Durations are reported, not
 * measured, so the histograms and SLO shares are exact:
 *   invoice.create    100: 85 x 3 ms, 10 x 20 ms, 5 x 150 ms (slow)
 *   payment.authorize  50: 40 x 40 ms, 6 x 90 ms, 4 x 250 ms (slow, 2 of
 *                      them declined with status 402 and a gateway error)
 * plus 3 "report.export" requests with duration 0 (not measured). */
struct request_plan {
	const char *handler;
	uint64_t first_id;
	int count;
};

static uint64_t invoice_duration(int i)
{
	return i < 85 ? 3 * MS : i < 95 ? 20 * MS
	                                : 150 * MS;
}

static uint64_t payment_duration(int i)
{
	return i < 40 ? 40 * MS : i < 46 ? 90 * MS
	                                 : 250 * MS;
}

/* A short pause between probes so the two threads' trails interleave. */
static void step(void)
{
	sleep_ns(100000);
}

static void invoice_request(uint64_t id, int i)
{
	billing_fire_request_start(id, "invoice.create");
	step();
	billing_fire_transaction_start(id, "invoice", 1234, "EUR");
	billing_fire_db_query_start(id, "invoice.insert");
	step();
	billing_fire_db_query_done(id, "invoice.insert", 0, 1 * MS);
	billing_fire_invoice_create(id, 77, 1234, "EUR");
	billing_fire_transaction_done(id, "invoice", 0, 2 * MS);
	step();
	billing_fire_request_done(id, "invoice.create", 0, invoice_duration(i));
}

static void payment_request(uint64_t id, int i)
{
	int declined = i >= 48; /* the last two slow ones */
	int result = declined ? 51 : 0;
	billing_fire_request_start(id, "payment.authorize");
	step();
	billing_fire_transaction_start(id, "payment", 5000, "USD");
	billing_fire_gateway_call_start(id, "stripe-sim", "authorize");
	step();
	billing_fire_gateway_call_done(id, "stripe-sim", "authorize", result, 20 * MS);
	billing_fire_payment_auth(id, 5000, "USD", "stripe-sim", result, 20 * MS);
	if (declined)
		billing_fire_error(id, "gateway", 402);
	billing_fire_transaction_done(id, "payment", result, 21 * MS);
	step();
	billing_fire_request_done(id, "payment.authorize", declined ? 402 : 0, payment_duration(i));
}

/* The payment thread starts once the first invoice request is done: a
 * script meets each handler for the first time one after the other (two
 * handlers first met on two CPUs at the same instant may share a row for
 * one event in request_latency.bt, which would make exact figures flaky). */
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t first_done_cond = PTHREAD_COND_INITIALIZER;
static int first_done;

static void *invoice_thread(void *unused)
{
	int i;
	(void)unused;
	for (i = 0; i < 100; i++) {
		invoice_request(1000 + (uint64_t)i, i);
		if (i == 0) {
			pthread_mutex_lock(&first_lock);
			first_done = 1;
			pthread_cond_signal(&first_done_cond);
			pthread_mutex_unlock(&first_lock);
		}
	}
	return NULL;
}

static void *payment_thread(void *unused)
{
	int i;
	(void)unused;
	pthread_mutex_lock(&first_lock);
	while (!first_done)
		pthread_cond_wait(&first_done_cond, &first_lock);
	pthread_mutex_unlock(&first_lock);
	for (i = 0; i < 50; i++) {
		payment_request(2000 + (uint64_t)i, i);
		step(); /* half as many requests over about the same time */
	}
	for (i = 0; i < 3; i++) {
		billing_fire_request_start(3000 + (uint64_t)i, "report.export");
		billing_fire_request_done(3000 + (uint64_t)i, "report.export", 0, 0);
	}
	return NULL;
}

int run_requests(void)
{
	pthread_t a, b;
	if (pthread_create(&a, NULL, invoice_thread, NULL) != 0 ||
	    pthread_create(&b, NULL, payment_thread, NULL) != 0) {
		fprintf(stderr, "scripts-workload: cannot start threads\n");
		return 1;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	/* then one 1 ms request on each of 8 more handlers, one after
	 * another: 10 handlers, more than request_latency has rows for */
	for (int k = 1; k <= 8; k++) {
		char handler[32];
		snprintf(handler, sizeof handler, "extra.%d", k);
		billing_fire_request_start(7000 + (uint64_t)k, handler);
		billing_fire_request_done(7000 + (uint64_t)k, handler, 0, 1 * MS);
	}
	return 0;
}

/* --- bounds -------------------------------------------------------------- */

/* Request 5000 fires 40 db-query pairs (82 events in all); then requests
 * 6000..6129 all start before any finishes.  Every one is slow (500 ms,
 * 200 ms reported). */
void run_bounds(void)
{
	int i;
	billing_fire_request_start(5000, "report.export");
	for (i = 0; i < 40; i++) {
		billing_fire_db_query_start(5000, "report.page");
		billing_fire_db_query_done(5000, "report.page", 0, 1 * MS);
	}
	billing_fire_request_done(5000, "report.export", 0, 500 * MS);
	for (i = 0; i < 130; i++)
		billing_fire_request_start(6000 + (uint64_t)i, "invoice.create");
	for (i = 0; i < 130; i++)
		billing_fire_request_done(6000 + (uint64_t)i, "invoice.create", 0, 200 * MS);
}

/* --- burst -------------------------------------------------------------- */

/* Requests 8000..8099, each slow, 5 ms apart (expected.py: BURST_IDS). */
void run_burst(void)
{
	for (int i = 0; i < 100; i++) {
		billing_fire_request_start(8000 + (uint64_t)i, "report.burst");
		billing_fire_request_done(8000 + (uint64_t)i, "report.burst", 0, 150 * MS);
		sleep_ns(5 * MS);
	}
}
