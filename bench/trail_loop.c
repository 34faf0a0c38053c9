/*
 * trail_loop -- what the slow-request trails cost a request
 * (bench/trail_bench.py).
 *
 *   trail_loop SHAPE N
 *
 * Serves N requests through BILLING_REQUEST_START / BILLING_REQUEST_DONE
 * in a stats build (stats_dep: BILLING_STATS_FORCE), untraced, with IDs
 * above 2^32 and two handlers in turn.  SHAPE:
 *   fast       request-start, request-done 1 ms later (under every threshold)
 *   slow       the same, 300 ms: each request a committed trail
 *   fast-work  a fast request with payment-auth, db-query-start (by ID)
 *              and error inside it: the events a trail keeps and lets go
 * serve() is the one function callgrind counts (--toggle-collect=serve);
 * prints "ns_per_request X" (this thread's CPU time / N).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "billing/probes.h"

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) int serve(const char *shape, unsigned long long n);

__attribute__((noinline)) int serve(const char *shape, unsigned long long n)
{
	static const char *const handlers[2] = { "payment.authorize", "invoice.create" };
	static const char *const gateways[2] = { "stripe-sim", "adyen-sim" };
	int slow = strcmp(shape, "slow") == 0, work = strcmp(shape, "fast-work") == 0;

	if (!slow && !work && strcmp(shape, "fast") != 0)
		return -1;
	for (unsigned long long i = 0; i < n; i++) {
		unsigned long long id = (1ULL << 32) + 1 + i;
		const char *handler = handlers[i & 1];
		BILLING_REQUEST_START(id, handler);
		if (work) {
			BILLING_DB_QUERY_START(id, "invoice.select");
			BILLING_PAYMENT_AUTH(id ^ 0xffff, (long long)(i & 65535), "EUR", gateways[i & 1], 0,
			                     3000000ULL + (i & 1023));
			BILLING_ERROR(id, "gateway", 7);
		}
		BILLING_REQUEST_DONE(id, handler, 0, (slow ? 300000000ULL : 1000000ULL) + (i & 1023) * 100);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	unsigned long long n = argc == 3 ? strtoull(argv[2], &end, 10) : 0;

	if (n == 0 || !end || *end) {
		fprintf(stderr, "usage: trail_loop fast|slow|fast-work N\n");
		return 2;
	}
	double t0 = cpu_ns();
	if (serve(argv[1], n) != 0) {
		fprintf(stderr, "trail_loop: unknown shape %s\n", argv[1]);
		return 2;
	}
	printf("ns_per_request %.2f\n", (cpu_ns() - t0) / (double)n);
	return 0;
}
