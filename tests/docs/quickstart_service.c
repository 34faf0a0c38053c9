/*
 * quickstart_service.c -- "your-service" of the README's quick start: built
 * the README's way (against libbillingprobes.so), so transaction-done sits
 * in the executable (its own macro) and in the library (the timing
 * helpers).  Waits for a line on stdin, then finishes QUICKSTART_TXNS
 * transactions, half through each module, prints "fired N" and waits for
 * stdin to close.
 */
#include <stdio.h>

#include "billing/probes.h"
#include "billing/timing.h"

#define QUICKSTART_TXNS 400

int main(void)
{
	char line[16];

	if (fgets(line, sizeof line, stdin) == NULL)
		return 1;
	for (unsigned long long i = 1; i <= QUICKSTART_TXNS / 2; i++) {
		billing_transaction_t tx;
		billing_transaction_begin(&tx, i, "invoice", 100, "EUR");
		billing_transaction_end(&tx, i % 10 == 0 ? 402 : 0);
		BILLING_TRANSACTION_DONE(i, "payment", 0, 1000);
	}
	printf("fired %d\n", QUICKSTART_TXNS);
	fflush(stdout);
	while (fgets(line, sizeof line, stdin) != NULL)
		;
	return 0;
}
