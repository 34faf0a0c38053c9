/*
 * shared_program.c -- a service built the README's way: linked against
 * the shared libbillingprobes.so, timing its spans with the helpers.  So
 * the helpers' probes (request, transaction, db-query, gateway-call)
 * sit in the library, and the others (invoice, payment, refund, error)
 * in the executable: what `check ./svc` and `trace --binary` must see
 * as one program.
 *
 *     tool_shared_program [ROUNDS] [--wait]
 *
 * Prints "ready" (with --wait, then reads a line), fires ROUNDS rounds
 * and prints "fired ROUNDS".  A round is what biz_metrics, tps and
 * errors count: one invoice (1250 EUR), one approved payment (1999 EUR),
 * one declined (250000 EUR, code 51), one refund (500 EUR), two
 * transactions through the helpers (one committed, one failed with
 * status 5) and one error (validation, 22).  Every other probe of
 * billing.d is compiled in as well (the generated samples, fired only
 * with ROUNDS 0), so that `check` expects nothing it lacks.
 */
#include "billing/probe_samples.h"
#include "program_start.h"

static void round_of_business(unsigned long long id)
{
	billing_transaction_t committed, failed;

	billing_transaction_begin(&committed, id, "payment", 1999, "EUR");
	BILLING_INVOICE_CREATE(id, 7, 1250, "EUR");
	BILLING_PAYMENT_AUTH(2 * id, 1999, "EUR", "sim", 0, 1000);
	billing_transaction_end(&committed, 0);
	billing_transaction_begin(&failed, id + 1, "payment", 250000, "EUR");
	BILLING_PAYMENT_AUTH(2 * id + 1, 250000, "EUR", "sim", 51, 1000);
	billing_transaction_end(&failed, 5);
	BILLING_REFUND_PROCESS(id, 2 * id, 500, "EUR", "duplicate");
	BILLING_ERROR(id, "validation", 22);
}

int main(int argc, char **argv)
{
	if (argc > 1 && atol(argv[1]) == 0) {
		billing_sample_fire_unpaired(0);
		billing_sample_fire_timing(0);
	}
	return program_main(argc, argv, round_of_business);
}
