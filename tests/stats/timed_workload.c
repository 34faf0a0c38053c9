/*
 * timed_workload.c -- payments served the README's way, for
 * test_traced_untraced.py: every span timed, by the library's helpers
 * (request, transaction, db-query, gateway-call) and by hand with
 * billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED()).  Built with
 * BILLING_STATS_FORCE: a stats build.
 *
 *   timed_workload N   prints "ready", waits for a line on stdin (a tracer
 *                      attaches meanwhile), serves N payments, prints
 *                      "segment PID PATH" and exits
 *
 * Everything but the durations is a function of the payment's index, so a
 * run traced and a run untraced must leave the same figures.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "billing/probes.h"
#include "billing/timing.h"

/* IDs beyond 32 bits, amounts beyond 31: a figure cut anywhere shows. */
#define ID_BASE 0x10000000000ULL
#define AMOUNT_BASE 3000000000LL

static void serve_payment(long i)
{
	billing_request_t req;
	billing_transaction_t tx;
	billing_db_query_t query;
	billing_gateway_call_t call;
	uint64_t id = ID_BASE + (uint64_t)i;
	long long amount = AMOUNT_BASE + (i % 9) * 250000LL;
	int result = i % 5 == 0 ? 51 : 0;

	billing_request_begin(&req, id, "payment.authorize");
	billing_transaction_begin(&tx, id, "payment", amount, "EUR");
	billing_db_query_begin(&query, id, "payment.insert");
	billing_db_query_end(&query, 0);

	/* The README's pattern: the clock read only when payment-auth wants it. */
	uint64_t t0 = billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED());
	billing_gateway_call_begin(&call, id, "stripe-sim", "authorize");
	billing_gateway_call_end(&call, result);
	BILLING_PAYMENT_AUTH(id, amount, "EUR", "stripe-sim", result, billing_elapsed_ns(t0));

	if (i % 3 == 0)
		BILLING_INVOICE_CREATE(id, ID_BASE + 7, amount, "EUR");
	if (i % 7 == 0)
		BILLING_REFUND_PROCESS(id, id, amount / 2, "EUR", "requested_by_customer");
	if (result)
		BILLING_ERROR(id, "gateway", result);
	billing_transaction_end(&tx, result);
	billing_request_end(&req, result ? 402 : 200);
}

int main(int argc, char **argv)
{
	char line[16];
	long n = argc == 2 ? atol(argv[1]) : 0;

	if (n <= 0) {
		fprintf(stderr, "usage: timed_workload N (N > 0 payments)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (!fgets(line, sizeof line, stdin))
		return 1;
	for (long i = 0; i < n; i++)
		serve_payment(i);
	printf("segment %d %s\n", (int)getpid(), billing_stats_path());
	return 0;
}
