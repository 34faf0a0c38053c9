/*
 * probe_program.c -- a program that carries and fires every probe of
 * billing.d, for the billing-probes tool tests.
 *
 *     tool_probe_program [SECONDS]
 *
 * Prints "ready" once its probes are in place, then fires every probe
 * every 20 ms for SECONDS (default 0: once) and exits, with the sample
 * arguments of billing/probe_samples.h (generated from billing.d).  The
 * live test lists it while it runs.  Built twice: with probes, and with
 * BILLING_PROBES_DISABLE defined (no probes: `check` must name them all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "billing/probe_samples.h"

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0.0;
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	long rounds = (long)(seconds * 50.0);

	printf("ready\n");
	fflush(stdout);
	billing_sample_fire_all(0);
	for (long i = 1; i <= rounds; i++) {
		nanosleep(&tick, NULL);
		billing_sample_fire_all((int)(i % BILLING_SAMPLE_ROUNDS));
	}
	return 0;
}
