/*
 * trail_burst.c -- slow and fast requests for the trails' tests
 * (test_slow_trails.py), then exit at once.
 *
 *   trail_burst THREADS SLOW FAST [HANDLER [FIRST]]
 *
 * Each of THREADS threads serves its share of SLOW slow requests (request-
 * done says 300 ms) and FAST fast ones (1 ms), in turn.  Request IDs are
 * FIRST + 1000 * thread + k, FIRST 2^32 + 1 unless given: above 2^32.  Each request fires, in order:
 * request-start; db-query-start, fired for it by ID from a helper thread
 * while this one waits; payment-auth, which joins the request this thread
 * started; error, with the request's ID; request-done.  The durations are
 * request-done's argument, so nothing sleeps.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <billing/probes.h>

#define SLOW_NS 300000000ull
#define FAST_NS 1000000ull

typedef struct job {
	pthread_t helper;
	uint64_t id;
} job_t;

static const char *handler = "payment.authorize";
static uint64_t first = (1ull << 32) + 1;
static long slow, fast;
static int threads;

static void *by_id(void *p)
{
	BILLING_DB_QUERY_START(((job_t *)p)->id, "invoice.select");
	return NULL;
}

static void *serve(void *p)
{
	long t = (long)(intptr_t)p;
	long mine_slow = slow / threads + (t < slow % threads), mine_fast = fast / threads + (t < fast % threads);
	for (long k = 0; mine_slow + mine_fast > 0; k++) {
		/* slow and fast in turn while both are left */
		int is_slow = mine_slow > 0 && (mine_fast == 0 || k % 2 == 0);
		if (is_slow)
			mine_slow--;
		else
			mine_fast--;
		job_t j = { 0, first + 1000u * (uint64_t)t + (uint64_t)k };
		BILLING_REQUEST_START(j.id, handler);
		if (pthread_create(&j.helper, NULL, by_id, &j) != 0 || pthread_join(j.helper, NULL) != 0)
			abort();
		BILLING_PAYMENT_AUTH(j.id ^ 0xffff, 1999, "EUR", "sim", 0, 42000);
		BILLING_ERROR(j.id, "gateway", 7);
		BILLING_REQUEST_DONE(j.id, handler, 0, is_slow ? SLOW_NS : FAST_NS);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4 || (threads = atoi(argv[1])) < 1 || threads > 64) {
		fprintf(stderr, "usage: trail_burst THREADS SLOW FAST [HANDLER [FIRST]]\n");
		return 2;
	}
	slow = atol(argv[2]);
	fast = atol(argv[3]);
	if (argc > 4)
		handler = argv[4];
	if (argc > 5)
		first = strtoull(argv[5], NULL, 10);
	pthread_t th[64];
	for (long t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, serve, (void *)(intptr_t)t) != 0)
			return 1;
	for (long t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	printf("%s\n", billing_stats_path());
	return 0;
}
