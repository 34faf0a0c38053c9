/*
 * event_loop -- one probe fired N times, for the perf suite's per-event
 * instruction counts (tests/perf/test_events.py).
 *
 *   event_loop EVENT N
 *
 * EVENT is payment-auth, error or fast-request (request-start, then
 * request-done 1 ms later: a request far below the slow threshold).  The
 * arguments vary as a service's do (two label sets, changing amounts and
 * durations), repeating every 1,024 events.  Built twice from this file:
 * counting into the stats segment with every setting at its default
 * (perf_event_loop), and with the probes compiled out
 * (perf_event_loop_compiled_out); callgrind counts fire_events() only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/probes.h"

static const char *const gateways[2] = { "stripe-sim", "adyen-sim" };
static const char *const handlers[2] = { "payment.authorize", "invoice.create" };
static const char *const kinds[2] = { "db", "gateway" };

/* Not inlined: the one function callgrind counts (--toggle-collect). */
__attribute__((noinline)) int fire_events(const char *event, unsigned long long n);

__attribute__((noinline)) int fire_events(const char *event, unsigned long long n)
{
	if (strcmp(event, "payment-auth") == 0) {
		for (unsigned long long i = 0; i < n; i++)
			BILLING_PAYMENT_AUTH(i, (long long)(i & 1023) * 100, "EUR", gateways[i & 1], (i & 7) == 0 ? 51 : 0,
			                     3000000ULL + (i & 1023) * 1000);
	} else if (strcmp(event, "error") == 0) {
		for (unsigned long long i = 0; i < n; i++)
			BILLING_ERROR(i, kinds[i & 1], 500);
	} else if (strcmp(event, "fast-request") == 0) {
		for (unsigned long long i = 1; i <= n; i++) {
			BILLING_REQUEST_START(i, handlers[i & 1]);
			BILLING_REQUEST_DONE(i, handlers[i & 1], 0, 1000000ULL + (i & 1023) * 100);
		}
	} else {
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	unsigned long long n = argc == 3 ? strtoull(argv[2], &end, 10) : 0;

	if (n == 0 || !end || *end != '\0') {
		fprintf(stderr, "usage: event_loop payment-auth|error|fast-request N\n");
		return 2;
	}
	if (fire_events(argv[1], n) != 0) {
		fprintf(stderr, "event_loop: unknown event %s\n", argv[1]);
		return 2;
	}
	return 0;
}
