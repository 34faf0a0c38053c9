/*
 * fair_labels.c -- known currencies among junk ones, for
 * tests/exporter/test_fair_labels.py (the BPF path; tests/stats fires the
 * same steps through the stats writer: stats_workload fair).
 *
 *   fair_labels CODES JUNK
 *
 * CODES is a file of known currency codes (provider/iso4217.txt).  Prints
 * "waiting pid PID", waits for the exporter's semaphores, then fires in
 * three steps, each ended by a "fired k=v ..." line; steps 2 and 3 start on
 * a line on stdin (so the test scrapes between them):
 *   1. invoice-create once (amount 100) per code but USD, GBP and CHF;
 *   2. invoice-create GBP 2000 twice and CHF 3000 once;
 *   3. JUNK distinct junk currencies (j00000 ...), each once through
 *      invoice-create, payment-auth (gateway gw-fair, approved) and
 *      refund-process (reason fair), amount 1; then the real ones: see
 *      fire_real() (tests/lib/fair_labels.h).
 * Then it waits for stdin to close.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "billing/probes.h"
#include "fair_labels.h"

static int wait_attached(void)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	for (int i = 0; i < 3000; i++) {
		if (BILLING_INVOICE_CREATE_ENABLED() && BILLING_PAYMENT_AUTH_ENABLED() &&
		    BILLING_REFUND_PROCESS_ENABLED())
			return 0;
		nanosleep(&nap, NULL);
	}
	fprintf(stderr, "fair_labels: no exporter attached within 30 s\n");
	return -1;
}

static int next_step(void)
{
	char line[64];
	return fgets(line, sizeof line, stdin) != NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fair_labels CODES JUNK\n");
		return 2;
	}
	long junk = atol(argv[2]);
	printf("waiting pid %d\n", (int)getpid());
	fflush(stdout);
	if (wait_attached() != 0)
		return 3;
	long n = fire_codes(argv[1]);
	if (n < 0)
		return 2;
	printf("fired step=1 invoices=%ld\n", n);
	fflush(stdout);
	if (!next_step())
		return 0;
	fire_late_known();
	printf("fired step=2\n");
	fflush(stdout);
	if (!next_step())
		return 0;
	fire_junk(junk);
	fire_real();
	printf("fired step=3 junk=%ld\n", junk);
	fflush(stdout);
	next_step();
	return 0;
}
