/*
 * many_handlers.c -- a service whose requests carry many handler names,
 * for `billing-probes top` against what its writer keeps
 * (test_top_hostile.py).  Built with the stats writer (stats_dep).
 *
 *   many_handlers N   fires one round, prints "segment PATH" and "ready";
 *                     then one round per line on stdin, each answered
 *                     "done"; exits when stdin closes
 *
 * A round: one request of 3 ms for each of handler-00 .. handler-(N-1).
 * The writer keeps BS_LABEL_VALUES (64) handler names, then counts the
 * rest as "other": N = 70 gives 64 names and other with 6 requests a
 * round.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "billing/probes.h"

static void round_of(int n)
{
	char name[32];
	for (int i = 0; i < n; i++) {
		uint64_t id = 0x10000000000ULL + (uint64_t)i;
		snprintf(name, sizeof name, "handler-%02d", i);
		BILLING_REQUEST_START(id, name);
		BILLING_REQUEST_DONE(id, name, 200, 3000000ULL);
	}
}

int main(int argc, char **argv)
{
	char line[64];
	int n = argc > 1 ? atoi(argv[1]) : 0;
	if (n <= 0 || n > 1000) {
		fprintf(stderr, "usage: many_handlers N (1..1000)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	round_of(n);
	printf("segment %s\nready\n", billing_stats_path());
	while (fgets(line, sizeof line, stdin)) {
		round_of(n);
		printf("done\n");
	}
	return 0;
}
