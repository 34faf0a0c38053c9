/*
 * two_module_program.c -- a service whose probes sit in two modules: it
 * fires request-start/done through its own macros (the executable's
 * notes) and through the timing helpers of libbillingprobes.so (the
 * library's notes), linked with -Wl,--no-as-needed so the library is
 * loaded either way.  bpftrace 0.17 cannot resolve "usdt::billing:..."
 * in such a process; `billing-probes trace` writes one spec per module.
 *
 *     two_module_program [ROUNDS] [--wait]
 *
 * Prints "ready" (with --wait, then reads a line), fires ROUNDS rounds and
 * prints "fired ROUNDS".  A round: one request through the helpers
 * (handler "helper.req", status 0), one through the macros (handler
 * "macro.req", status 0, 2 ms), one payment transaction through the
 * helpers (700 EUR, status 0), one error (component "validation", 22).
 */
#include "billing/probes.h"
#include "billing/timing.h"
#include "program_start.h"

static void round_in_two_modules(unsigned long long id)
{
	billing_request_t req;
	billing_transaction_t tx;

	billing_request_begin(&req, id, "helper.req");
	billing_transaction_begin(&tx, id, "payment", 700, "EUR");
	billing_transaction_end(&tx, 0);
	billing_request_end(&req, 0);

	BILLING_REQUEST_START(1000000 + id, "macro.req");
	BILLING_ERROR(1000000 + id, "validation", 22);
	BILLING_REQUEST_DONE(1000000 + id, "macro.req", 0, 2000000);
}

int main(int argc, char **argv)
{
	return program_main(argc, argv, round_in_two_modules);
}
