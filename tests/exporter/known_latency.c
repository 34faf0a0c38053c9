/*
 * known_latency.c -- requests of known durations into a stats segment,
 * for test_native_histograms.py and test_exemplars_native.py, then exit
 * at once.
 *
 *   known_latency HANDLER [FIRST_ID] < DURATIONS
 *
 * Each line of stdin is one request's duration in nanoseconds; each
 * request fires request-start and request-done (the duration is request-
 * done's argument, so nothing sleeps) with the next ID from FIRST_ID
 * (2^32 + 1 without it), and a payment-auth whose amount is the
 * duration's microseconds (a known amount distribution too).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <billing/probes.h>

int main(int argc, char **argv)
{
	uint64_t id = (1ull << 32) + 1, ns;
	unsigned long n = 0;
	char *end = NULL;

	if (argc == 3)
		id = strtoull(argv[2], &end, 10);
	if (argc < 2 || argc > 3 || (end && (*end || end == argv[2]))) {
		fprintf(stderr, "usage: known_latency HANDLER [FIRST_ID] < DURATIONS\n");
		return 2;
	}
	while (scanf("%" SCNu64, &ns) == 1) {
		BILLING_REQUEST_START(id, argv[1]);
		BILLING_PAYMENT_AUTH(id, (int64_t)(ns / 1000), "EUR", "known", 0, 1000);
		BILLING_REQUEST_DONE(id, argv[1], 0, ns);
		id++;
		n++;
	}
	printf("%lu requests\n", n);
	return 0;
}
