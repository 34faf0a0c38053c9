/*
 * trail_pace.c -- slow requests at a steady rate, for the exemplar soak
 * (test_trail_soak.py).
 *
 *   trail_pace RATE SECONDS
 *
 * For SECONDS, every 10 ms, fires its share of RATE slow requests a
 * second and as many fast ones (1 ms), each request-start, payment-auth
 * and request-done, over three handlers.  The slow ones take, in turn of
 * ten, 300 ms five times, 700 ms twice, 2 s, 4 s and 12 s: the buckets le
 * 0.5, 1, 2.5, 5 and +Inf, the busy and the rare.  Durations are
 * request-done's argument: nothing sleeps but the pacing.  IDs count from
 * 2^40.  Prints its segment's path at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <billing/probes.h>

#define MS 1000000ULL

static const char *const handlers[3] = { "payment.authorize", "invoice.create", "refund.create" };
static const unsigned long long slow_ms[10] = { 300, 300, 300, 300, 300, 700, 700, 2000, 4000, 12000 };

static unsigned long long next_id = 1ULL << 40;

static void request(unsigned long long n, unsigned long long duration_ns)
{
	unsigned long long id = next_id++;
	const char *handler = handlers[n % 3];
	BILLING_REQUEST_START(id, handler);
	BILLING_PAYMENT_AUTH(id, 1999, "EUR", "stripe-sim", 0, 2 * MS);
	BILLING_REQUEST_DONE(id, handler, 0, duration_ns);
}

int main(int argc, char **argv)
{
	double rate = argc == 3 ? atof(argv[1]) : 0, seconds = argc == 3 ? atof(argv[2]) : 0;
	if (rate <= 0 || seconds <= 0) {
		fprintf(stderr, "usage: trail_pace RATE SECONDS\n");
		return 2;
	}
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long long fired = 0;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		double t = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
		if (t >= seconds)
			break;
		for (; (double)fired < rate * t; fired++) {
			request(fired, slow_ms[fired % 10] * MS);
			request(fired, 1 * MS);
		}
		nanosleep(&(struct timespec){ 0, 10 * 1000000L }, NULL);
	}
	printf("%s\n", billing_stats_path());
	return 0;
}
