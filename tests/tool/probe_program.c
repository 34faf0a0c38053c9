/*
 * probe_program.c -- a program that carries and fires all 12 billing
 * probes, for the billing-probes tool tests.
 *
 *     tool_probe_program [SECONDS]
 *
 * Prints "ready" once its probes are in place, then fires every probe
 * every 20 ms for SECONDS (default 0: once) and exits.  The live test
 * lists it while it runs.  Built twice: with probes, and with
 * BILLING_PROBES_DISABLE defined (no probes: `check` must name all 12).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "billing/probes.h"

static void fire_all(unsigned long long i)
{
	BILLING_REQUEST_START(i, "tool.test");
	BILLING_TRANSACTION_START(i, "payment", 1250, "EUR");
	BILLING_INVOICE_CREATE(i, 42, 1250, "EUR");
	BILLING_DB_QUERY_START(i, "invoice.insert");
	BILLING_DB_QUERY_DONE(i, "invoice.insert", 0, 1000);
	BILLING_GATEWAY_CALL_START(i, "stripe-sim", "authorize");
	BILLING_GATEWAY_CALL_DONE(i, "stripe-sim", "authorize", 0, 2000);
	BILLING_PAYMENT_AUTH(i, 1250, "EUR", "stripe-sim", 0, 2000);
	BILLING_REFUND_PROCESS(i, i, 250, "EUR", "requested_by_customer");
	BILLING_ERROR(i, "validation", 22);
	BILLING_TRANSACTION_DONE(i, "payment", 0, 5000);
	BILLING_REQUEST_DONE(i, "tool.test", 200, 9000);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0.0;
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	long rounds = (long)(seconds * 50.0);

	printf("ready\n");
	fflush(stdout);
	fire_all(0);
	for (long i = 1; i <= rounds; i++) {
		nanosleep(&tick, NULL);
		fire_all((unsigned long long)i);
	}
	return 0;
}
