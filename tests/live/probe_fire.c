/*
 * Fires every probe of billing.d with the sample arguments of
 * billing/probe_samples.h (generated from billing.d), for
 * tests/live/test_live_probes.py to check under a real bpftrace.
 *
 * Each round k < BILLING_SAMPLE_ROUNDS fires every probe through its macro
 * with round k's samples, then every NAME-start/NAME-done pair through the
 * library's timing helpers (whose durations are measured, not fixed).  The
 * samples cover each type's edges: integers beyond 32 bits and 2^63,
 * negative, NULL strings (reach the consumer as ""), strings that are not
 * UTF-8.  Every macro's first argument is counted, so the number of
 * evaluations printed at exit shows arguments were evaluated only while
 * traced.
 *
 * Built with APP_FIRES_PAIRED_PROBES=0 (the shared-library variant), the
 * program leaves the paired probes to the library alone: bpftrace 0.17
 * reads the wrong argument specs when one probe name has sites in two
 * modules of a process, and a real service fires each probe from one place.
 *
 * Usage: probe_fire [--wait]
 *   --wait  print "ready", then read one line from stdin before firing: a
 *           harness attaching with bpftrace -p sends it once attached.
 */
#include <stdio.h>
#include <string.h>

static int evaluations;
#define BILLING_SAMPLE_COUNT(x) (evaluations++, (x))

#include "billing/probe_samples.h"

#ifndef APP_FIRES_PAIRED_PROBES
#  define APP_FIRES_PAIRED_PROBES 1
#endif

int main(int argc, char **argv)
{
	int k;

	if (argc > 1 && strcmp(argv[1], "--wait") == 0) {
		char line[16];
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			return 2;
	}
	for (k = 0; k < BILLING_SAMPLE_ROUNDS; k++) {
#if APP_FIRES_PAIRED_PROBES
		billing_sample_fire_all(k);
#else
		billing_sample_fire_unpaired(k);
#endif
		billing_sample_fire_timing(k);
	}
	printf("evaluations=%d\n", evaluations);
	return 0;
}
