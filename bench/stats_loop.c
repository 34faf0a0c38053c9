/*
 * stats_loop -- what a stats-fed probe costs per event (bench/stats_bench.py).
 *
 *   stats_loop PROBE THREADS N
 *
 * THREADS threads each fire PROBE N times through its BILLING_<PROBE>()
 * macro in a stats build (stats_dep: BILLING_STATS_FORCE), untraced, with
 * arguments that vary like a service's (two label sets, changing amounts
 * and durations).  PROBE is one of the stats-fed probes, or "atomic": a
 * relaxed atomic add on one shared counter (what a native bucket costs: a
 * lock-prefixed add), or "own": an add to a counter of the thread's own,
 * no lock prefix (what a thread slot's cell costs), for comparison.  Prints "ns_per_event X" (each thread's CPU time for its
 * loop / N, averaged over threads: what an event costs the thread that
 * fires it, whatever else shares the cores) and "events_per_second Y" (all
 * threads' events over the wall time of the run).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "billing/probes.h"

static const char *probe;
static long n;
static unsigned long long shared_counter;

static double clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void *run(void *arg)
{
	double *ns = arg;
	static const char *const names[2] = { "payment.authorize", "invoice.create" };
	static const char *const gateways[2] = { "stripe-sim", "adyen-sim" };
	double t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	if (strcmp(probe, "atomic") == 0) {
		for (long i = 0; i < n; i++)
			__atomic_fetch_add(&shared_counter, 1, __ATOMIC_RELAXED);
	} else if (strcmp(probe, "own") == 0) {
		static __thread unsigned long long own;
		for (long i = 0; i < n; i++)
#if defined(__x86_64__) && defined(__GNUC__)
			__asm__ __volatile__("addq $1, %0"
			                     : "+m"(own)); /* as a slot's cell: one add, no lock */
#else
			__atomic_store_n(&own, __atomic_load_n(&own, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#endif
#if defined(__x86_64__) && defined(__GNUC__)
	} else if (strcmp(probe, "rdtsc") == 0) { /* what timing a trail event costs here */
		for (long i = 0; i < n; i++)
			shared_counter += __builtin_ia32_rdtsc();
#endif
	} else if (strcmp(probe, "request-done") == 0) {
		for (long i = 0; i < n; i++)
			BILLING_REQUEST_DONE((unsigned long long)i, names[i & 1], 0, 1000ULL + (unsigned long long)(i & 1023) * 1000);
	} else if (strcmp(probe, "transaction-done") == 0) {
		for (long i = 0; i < n; i++)
			BILLING_TRANSACTION_DONE((unsigned long long)i, "invoice", (int)(i & 1), 2000000ULL + (unsigned long long)(i & 1023));
	} else if (strcmp(probe, "invoice-create") == 0) {
		for (long i = 0; i < n; i++)
			BILLING_INVOICE_CREATE((unsigned long long)i, 7ULL, (long long)(i & 65535), i & 1 ? "EUR" : "USD");
	} else if (strcmp(probe, "payment-auth") == 0) {
		for (long i = 0; i < n; i++)
			BILLING_PAYMENT_AUTH((unsigned long long)i, (long long)(i & 65535), "EUR", gateways[i & 1], (i & 7) == 0 ? 51 : 0,
			                     3000000ULL + (unsigned long long)(i & 1023));
	} else if (strcmp(probe, "payment-auth-in-request") == 0) {
		/* payment-auth inside requests of 30 (the trails keep each one) */
		for (long i = 0; i < n; i++) {
			unsigned long long id = (unsigned long long)(i / 30) + 1;
			if (i % 30 == 0)
				BILLING_REQUEST_START(id, names[0]);
			BILLING_PAYMENT_AUTH((unsigned long long)i, (long long)(i & 65535), "EUR", gateways[i & 1], (i & 7) == 0 ? 51 : 0,
			                     3000000ULL + (unsigned long long)(i & 1023));
			if (i % 30 == 29)
				BILLING_REQUEST_DONE(id, names[0], 0, 1000000ULL);
		}
	} else if (strcmp(probe, "refund-process") == 0) {
		for (long i = 0; i < n; i++)
			BILLING_REFUND_PROCESS((unsigned long long)i, 9ULL, (long long)(i & 4095), "EUR", i & 1 ? "duplicate" : "fraud");
	} else if (strcmp(probe, "error") == 0) {
		for (long i = 0; i < n; i++)
			BILLING_ERROR((unsigned long long)i, i & 1 ? "db" : "gateway", 500);
	} else if (strcmp(probe, "db-query-done") == 0) {
		for (long i = 0; i < n; i++)
			BILLING_DB_QUERY_DONE((unsigned long long)i, i & 1 ? "invoice.insert" : "payment.select", 0, 400000ULL + (unsigned long long)(i & 1023));
	} else if (strcmp(probe, "gateway-call-done") == 0) {
		for (long i = 0; i < n; i++)
			BILLING_GATEWAY_CALL_DONE((unsigned long long)i, gateways[i & 1], "authorize", 0, 3000000ULL + (unsigned long long)(i & 1023));
	} else {
		*ns = -1;
		return NULL;
	}
	*ns = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	double ns[64], sum = 0;
	int threads;

	if (argc != 4 || (threads = atoi(argv[2])) < 1 || threads > 64 || (n = atol(argv[3])) < 1) {
		fprintf(stderr, "usage: stats_loop PROBE THREADS N\n");
		return 2;
	}
	probe = argv[1];
	double t0 = now_ns();
	for (int t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, run, &ns[t]) != 0)
			return 1;
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	double wall = now_ns() - t0;
	for (int t = 0; t < threads; t++) {
		if (ns[t] < 0) {
			fprintf(stderr, "stats_loop: unknown probe %s\n", probe);
			return 2;
		}
		sum += ns[t];
	}
	printf("ns_per_event %.2f\n", sum / threads);
	printf("events_per_second %.0f\n", (double)n * threads / (wall / 1e9));
#if BILLING_STATS_BUILD_
	printf("segment %s\n", billing_stats_path());
#endif
	return 0;
}
