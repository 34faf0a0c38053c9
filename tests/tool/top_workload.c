/*
 * top_workload.c -- known batches of stats-fed probe fires, for the tests
 * of `billing-probes top` (test_top.py).  Built with the stats writer
 * (stats_dep): a stats build whatever -Dstats says.
 *
 *   top_workload   fires one batch, prints "segment PATH" and "ready";
 *                  then one batch per line on stdin, each answered
 *                  "done"; exits when stdin closes
 *
 * A batch: 30 invoices, 100 payments (every fifth declined), 10 refunds,
 * 20 errors; handler payment.authorize 100 requests, 50 of 3 ms, 45 of
 * 80 ms, 4 of 200 ms and 1 of 700 ms (p50 in the 5 ms bucket, p95 in
 * 100 ms, p99 in 250 ms); invoice.create 30 of 0.4 ms; refund.create 5
 * unmeasured.  The measured requests are opened by request-start, so a
 * slow one keeps its trail: billing.d's threshold (250 ms) finds 1 slow
 * request of payment.authorize per batch, BILLING_STATS_SLOW=
 * payment.authorize=100ms 5.  IDs beyond 32 bits: a figure cut anywhere
 * shows.
 */
#include <stdint.h>
#include <stdio.h>

#include "billing/probes.h"

#define ID_BASE 0x10000000000ULL
#define MS 1000000ULL

static unsigned long long payment_duration(int i)
{
	return i < 50 ? 3 * MS : i < 95 ? 80 * MS
	                     : i < 99   ? 200 * MS
	                                : 700 * MS;
}

static void batch(void)
{
	for (int i = 0; i < 100; i++) {
		uint64_t id = ID_BASE + (uint64_t)i;
		BILLING_REQUEST_START(id, "payment.authorize");
		BILLING_PAYMENT_AUTH(id, 1000, "EUR", "stripe-sim", i % 5 == 0 ? 51 : 0, 2 * MS);
		BILLING_REQUEST_DONE(id, "payment.authorize", 200, payment_duration(i));
	}
	for (int i = 0; i < 30; i++) {
		BILLING_REQUEST_START(ID_BASE + (uint64_t)i, "invoice.create");
		BILLING_INVOICE_CREATE(ID_BASE + (uint64_t)i, ID_BASE, 500, "EUR");
		BILLING_REQUEST_DONE(ID_BASE + (uint64_t)i, "invoice.create", 200, 400000ULL);
	}
	for (int i = 0; i < 10; i++)
		BILLING_REFUND_PROCESS(ID_BASE + (uint64_t)i, ID_BASE, 100, "EUR", "duplicate");
	for (int i = 0; i < 20; i++)
		BILLING_ERROR(ID_BASE + (uint64_t)i, "gateway", 51);
	for (int i = 0; i < 5; i++)
		BILLING_REQUEST_DONE(ID_BASE + (uint64_t)i, "refund.create", 200, 0ULL);
}

int main(void)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	batch();
	printf("segment %s\nready\n", billing_stats_path());
	while (fgets(line, sizeof line, stdin)) {
		batch();
		printf("done\n");
	}
	return 0;
}
