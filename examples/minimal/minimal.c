/*
 * The smallest real program with billing probes: one request, one
 * payment authorisation.
 *
 * Build against an installed billing-probes:
 *     cc minimal.c $(pkg-config --cflags --libs billing-probes) -o minimal
 * Watch it (root, Linux):
 *     bpftrace -e 'usdt:./minimal:billing:payment__auth
 *         { printf("%s %d %s\n", str(arg2), arg1, arg4 == 0 ? "approved" : "declined"); }' \
 *         -c ./minimal
 */
#include <stdio.h>

#include "billing/probes.h"
#include "billing/timing.h"

static int authorize(unsigned long long payment_id, long long amount_minor, const char *currency)
{
	/* Read the clock only if someone watches payment-auth. */
	unsigned long long t0 = billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED());
	int result = amount_minor > 100000 ? 51 : 0; /* 51: insufficient funds */

	BILLING_PAYMENT_AUTH(payment_id, amount_minor, currency, "demo-gateway", result,
	                     billing_elapsed_ns(t0));
	return result;
}

int main(void)
{
	billing_request_t request;
	int result;

	billing_request_begin(&request, 1, "payment.authorize");
	result = authorize(1001, 1999, "EUR");
	billing_request_end(&request, result);
	printf("payment 1001: %s\n", result == 0 ? "approved" : "declined");
	return 0;
}
