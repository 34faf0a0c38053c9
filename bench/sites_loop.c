/*
 * sites_loop -- what an untraced probe site costs, in instructions.
 *
 * bench_loop() calls handle() N times; handle() holds SITES probe sites.
 * run_bench.py counts the instructions of bench_loop() with callgrind for
 * builds of this one file that differ only in their probes:
 *   disabled   -DBILLING_PROBES_DISABLE: the macros compile to nothing
 *   scalar     probes compiled in, integer and literal-string arguments
 *   guarded    probes compiled in, arguments that cost something to
 *              compute (table look-ups, a function call, snprintf) behind
 *              the is-enabled check the macros carry
 *   fast       as scalar, with the 5-byte nop site (-mno-red-zone)
 *   function, function_guarded
 *              as scalar and guarded, with function sites
 *              (-Dprobe_site=function): a call per site, no guard
 * and divides the difference to "disabled" by N * SITES.
 *
 * Usage: sites_loop [N]   (default 1000000)
 */
#include <stdio.h>
#include <stdlib.h>

#include "billing/probes.h"
#include "loop_count.h"

#define SITES 8

/* The handler's own work, identical in every build. */
static volatile uint64_t sink;

#if defined(BENCH_GUARDED)
static const char *const handlers[4] = { "invoice.create", "payment.authorize", "refund.process", "health" };
static const char *const currencies[3] = { "EUR", "USD", "JPY" };

/* Stands in for a look-up a service would only do for the probe. */
static __attribute__((noinline)) const char *
gateway_of(uint64_t i)
{
	return (i & 1) ? "stripe-sim" : "adyen-sim";
}
#endif

static __attribute__((noinline)) void
handle(uint64_t i)
{
	sink += i;
#if defined(BENCH_GUARDED)
	BILLING_REQUEST_START(i, handlers[i & 3]);
	BILLING_TRANSACTION_START(i, "payment", (int64_t)(i * 100 + 99), currencies[i % 3]);
	BILLING_GATEWAY_CALL_START(i, gateway_of(i), "authorize");
	BILLING_PAYMENT_AUTH(i, (int64_t)(i * 100 + 99), currencies[i % 3], gateway_of(i),
	                     (int32_t)(i % 7 == 0 ? 51 : 0), (i * 37) >> 3);
	BILLING_GATEWAY_CALL_DONE(i, gateway_of(i), "authorize", 0, (i * 37) >> 3);
	/* A string made only for the probe: the explicit guard skips snprintf. */
	if (BILLING_ERROR_ENABLED()) {
		char component[32];
		snprintf(component, sizeof component, "shard-%u", (unsigned)(i % 16));
		BILLING_ERROR(i, component, 409);
	}
	BILLING_TRANSACTION_DONE(i, "payment", 0, (i * 41) >> 3);
	BILLING_REQUEST_DONE(i, handlers[i & 3], 200, (i * 53) >> 3);
#else
	BILLING_REQUEST_START(i, "payment.authorize");
	BILLING_TRANSACTION_START(i, "payment", 1999, "EUR");
	BILLING_GATEWAY_CALL_START(i, "stripe-sim", "authorize");
	BILLING_PAYMENT_AUTH(i, 1999, "EUR", "stripe-sim", 0, i);
	BILLING_GATEWAY_CALL_DONE(i, "stripe-sim", "authorize", 0, i);
	BILLING_ERROR(i, "gateway", 409);
	BILLING_TRANSACTION_DONE(i, "payment", 0, i);
	BILLING_REQUEST_DONE(i, "payment.authorize", 200, i);
#endif
}

/* callgrind collects from here (--toggle-collect=bench_loop). */
__attribute__((noinline)) void bench_loop(uint64_t n);

__attribute__((noinline)) void
bench_loop(uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		handle(i);
}

int main(int argc, char **argv)
{
	unsigned long long n;

	n = loop_count(argc, argv, 1000000);
	if (n == 0)
		return 2;
	bench_loop(n);
	printf("iterations=%llu sites=%d\n", n, SITES);
	return 0;
}
