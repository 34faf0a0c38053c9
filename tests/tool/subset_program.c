/*
 * subset_program.c -- a service that promises only some of billing.d's
 * probes: invoices, payments and refunds, through the public macros, and
 * nothing else (no request, transaction, database or gateway probe).  The
 * subset is the point: `check --expect` and `trace` must work on it.
 *
 *     subset_program [ROUNDS] [--wait]
 *
 * Prints "ready"; with --wait it then reads one line from stdin (the test
 * writes it once a tracer is attached); then fires ROUNDS rounds (default
 * 1) and prints "fired ROUNDS".  A round is one invoice (1250 EUR), one
 * approved payment (1999 EUR), one declined payment (250000 EUR, code 51)
 * and one refund (500 EUR), so a tracer's figures are known exactly.
 *
 * Two variants for the downstream-project test (tests/install):
 *   SUBSET_WITHOUT_REFUND   the refund probe is gone
 *   SUBSET_REFUND_OLD_ARGS  refund-process fired the way an out-of-date
 *                           header would: four arguments, not five
 */
#include "billing/probes.h"
#include "program_start.h"
#ifdef SUBSET_REFUND_OLD_ARGS
#  include <sys/sdt.h>
#endif

static void refund(unsigned long long id, unsigned long long payment_id)
{
#if defined(SUBSET_REFUND_OLD_ARGS)
	long long amount = 500;
	const char *currency = "EUR";
	STAP_PROBE4(billing, refund__process, id, payment_id, amount, currency);
#elif !defined(SUBSET_WITHOUT_REFUND)
	BILLING_REFUND_PROCESS(id, payment_id, 500, "EUR", "duplicate");
#else
	(void)id;
	(void)payment_id;
#endif
}

static void round_of_four(unsigned long long id)
{
	BILLING_INVOICE_CREATE(id, 7, 1250, "EUR");
	BILLING_PAYMENT_AUTH(2 * id, 1999, "EUR", "sim", 0, 1000);
	BILLING_PAYMENT_AUTH(2 * id + 1, 250000, "EUR", "sim", 51, 1000);
	refund(id, 2 * id);
}

int main(int argc, char **argv)
{
	return program_main(argc, argv, round_of_four);
}
