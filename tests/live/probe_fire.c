/*
 * Fires every probe of billing.d a known number of times with known
 * arguments, for tests/live/live_probes.py to check under a real bpftrace.
 *
 * Each probe fires ROUNDS times; in round k every argument takes the value
 * the harness expects (see expected_events() in live_probes.py):
 *   uint64 ids       100 + k  (the second id of a probe: 200 + k)
 *   int64 amounts    -1999 + k
 *   int32 codes      0, -7, 2
 *   uint64 durations (k + 1) * 10^12, beyond 32 bits
 *   strings          NULL (reaches the consumer as ""), "EUR", and an odd
 *                    string that is not UTF-8
 * The request/transaction/db/gateway pairs also fire through the library's
 * timing helpers (ids 500 + k), whose durations are measured, not fixed.
 * Every id argument goes through counted(), so the number of evaluations
 * printed at exit shows arguments were evaluated only while traced.
 *
 * Built with APP_FIRES_HELPER_PROBES=0 (the shared-library variant), the
 * program leaves the helper pairs to the library alone: bpftrace 0.17 reads
 * the wrong argument specs when one probe name has sites in two modules of
 * a process, and a real service fires each probe from one place.
 *
 * Usage: probe_fire [--wait]
 *   --wait  read one line from stdin before firing: a harness attaching
 *           with bpftrace -p sends it once bpftrace has attached.
 */
#include <stdio.h>
#include <string.h>

#include "billing/probes.h"
#include "billing/timing.h"

#define ROUNDS 3

#ifndef APP_FIRES_HELPER_PROBES
#define APP_FIRES_HELPER_PROBES 1
#endif

static int evaluations;

static unsigned long long
counted(unsigned long long v)
{
	evaluations++;
	return v;
}

static const char *
text(int k)
{
	static const char *const values[ROUNDS] = { NULL, "EUR", "caf\xc3\xa9-\xff-odd" };
	return values[k];
}

static void
fire_macros(int k)
{
	unsigned long long id = 100u + (unsigned)k, id2 = 200u + (unsigned)k;
	long long amount = -1999 + k;
	int code = k == 1 ? -7 : k;
	unsigned long long ns = (unsigned long long)(k + 1) * 1000000000000ull;

#if APP_FIRES_HELPER_PROBES
	BILLING_REQUEST_START(counted(id), text(k));
	BILLING_REQUEST_DONE(counted(id), text(k), code, ns);
	BILLING_TRANSACTION_START(counted(id), text(k), amount, text(k));
	BILLING_TRANSACTION_DONE(counted(id), text(k), code, ns);
#endif
	BILLING_INVOICE_CREATE(counted(id), id2, amount, text(k));
	BILLING_PAYMENT_AUTH(counted(id), amount, text(k), text(k), code, ns);
	BILLING_REFUND_PROCESS(counted(id), id2, amount, text(k), text(k));
	BILLING_ERROR(counted(id), text(k), code);
#if APP_FIRES_HELPER_PROBES
	BILLING_DB_QUERY_START(counted(id), text(k));
	BILLING_DB_QUERY_DONE(counted(id), text(k), code, ns);
	BILLING_GATEWAY_CALL_START(counted(id), text(k), text(k));
	BILLING_GATEWAY_CALL_DONE(counted(id), text(k), text(k), code, ns);
#endif
}

static void
fire_helpers(int k)
{
	unsigned long long id = 500u + (unsigned)k;
	billing_request_t r;
	billing_transaction_t t;
	billing_db_query_t q;
	billing_gateway_call_t g;

	billing_request_begin(&r, id, "helper.request");
	billing_transaction_begin(&t, id, "helper.tx", 4200, "JPY");
	billing_db_query_begin(&q, id, "helper.query");
	billing_gateway_call_begin(&g, id, "helper-gw", "authorize");
	billing_gateway_call_end(&g, 0);
	billing_db_query_end(&q, 0);
	billing_transaction_end(&t, 0);
	billing_request_end(&r, 0);
}

int
main(int argc, char **argv)
{
	int k;

	if (argc > 1 && strcmp(argv[1], "--wait") == 0) {
		char line[16];
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			return 2;
	}
	for (k = 0; k < ROUNDS; k++) {
		fire_macros(k);
		fire_helpers(k);
	}
	printf("evaluations=%d\n", evaluations);
	return 0;
}
