/*
 * fire_loop -- what a traced probe costs per fire, in nanoseconds.
 *
 * Fires payment-auth N times in a loop and prints the loop's time per
 * iteration.  run_bench.py runs it untraced and under bpftrace (count()
 * only, and a biz_metrics-like aggregation) for the standard 1-byte site
 * and the fast 5-byte site; traced minus untraced is the cost of one fire.
 * It also prints when it started (CLOCK_REALTIME), so the driver can tell
 * how long bpftrace took from launch to running the traced program.
 *
 * Usage: fire_loop [N]   (default 1000000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "billing/probes.h"
#include "loop_count.h"

static const char *const gateways[3] = { "stripe-sim", "adyen-sim", "paypal-sim" };
static const char *const currencies[3] = { "EUR", "USD", "JPY" };

static double now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long long n, i;
	double started, t0, t1;

	started = now_ns(CLOCK_REALTIME);
	n = loop_count(argc, argv, 1000000);
	if (n == 0)
		return 2;
	t0 = now_ns(CLOCK_MONOTONIC);
	for (i = 0; i < n; i++)
		BILLING_PAYMENT_AUTH(i, (int64_t)(i % 5000) * 100, currencies[i % 3], gateways[i % 3],
		                     (int32_t)(i % 10 == 0 ? 51 : 0), 1000 + (i & 1023));
	t1 = now_ns(CLOCK_MONOTONIC);
	printf("started_at_ns=%.0f traced=%d fires=%llu ns_per_fire=%.2f\n",
	       started, BILLING_PAYMENT_AUTH_ENABLED() ? 1 : 0, n, (t1 - t0) / (double)n);
	return 0;
}
