/* Every probe macro used the way an application would: compiled by
 * header_compile.py as C99, C11 and C++17 with gcc and clang under
 * -Wall -Wextra -Werror -pedantic, with probes on and off. */
#include "billing/probes.h"

#include <stddef.h>

static int
fire_every_probe(const char *maybe_null)
{
	unsigned long long id = 1;
	long long amount_minor = -1999;
	int status = 0;

	BILLING_REQUEST_START(id, maybe_null);
	BILLING_REQUEST_DONE(id, "invoices.create", status, 1000u);
	BILLING_TRANSACTION_START(id, "payment", amount_minor, "EUR");
	BILLING_TRANSACTION_DONE(id, "payment", status, 0);
	BILLING_INVOICE_CREATE(id, 2u, amount_minor, "USD");
	BILLING_PAYMENT_AUTH(id, amount_minor, "EUR", "stripe-sim", 51, 2500u);
	BILLING_REFUND_PROCESS(id, 2u, 500, "EUR", NULL);
	BILLING_ERROR(id, "db", 5);
	BILLING_DB_QUERY_START(id, "invoice.insert");
	BILLING_DB_QUERY_DONE(id, "invoice.insert", 0, 1u);
	BILLING_GATEWAY_CALL_START(id, "stripe-sim", "authorize");
	BILLING_GATEWAY_CALL_DONE(id, "stripe-sim", "authorize", 0, 1u);
	return BILLING_PAYMENT_AUTH_ENABLED() ? 1 : 0;
}

int
main(void)
{
	return fire_every_probe(NULL);
}
