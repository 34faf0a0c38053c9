/*
 * billing/timing.h -- time a request, transaction, database query or gateway
 * call and fire its start/done probes.
 *
 *     billing_request_t r;
 *     billing_request_begin(&r, request_id, "payment.authorize");
 *     ...serve it...
 *     billing_request_end(&r, status);   fires request-done with duration_ns
 *
 * The clock is read only while the start or done probe of the pair is
 * enabled (BILLING_<PROBE>_ENABLED(): traced, or in a stats build counted
 * by the stats, as every done probe is), so untraced timing without stats
 * costs a call and two semaphore loads.  A span that began while neither
 * was enabled reports duration_ns 0 ("not measured").  Spans are timed by
 * the time-stamp counter where the kernel keeps the monotonic clock by it
 * (an instruction at each end, no clock_gettime), else by the monotonic
 * clock (lib/span_clock.c says how the two agree).
 * The begin/end pair may run on different threads (a hand-off between
 * workers is timed right): the start time lives in the struct, not in
 * thread-local storage.  The probes fire from libbillingprobes itself.
 */
#ifndef BILLING_TIMING_H
#define BILLING_TIMING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC). */
uint64_t billing_clock_ns(void);

/* The start of a span when wanted is non-zero, else 0: for probes timed
 * by hand, e.g. t0 = billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED()),
 * which clocks while payment-auth is traced or counted by the stats.  A
 * mark for billing_elapsed_ns(), not a time: on the time-stamp counter it
 * has its top bit set. */
uint64_t billing_clock_if(int wanted);

/* Nanoseconds since start_ns (billing_clock_if()'s mark, or a
 * billing_clock_ns() time), or 0 when start_ns is 0 (not clocked). */
uint64_t billing_elapsed_ns(uint64_t start_ns);

/* One begin/end pair per NAME-start / NAME-done pair of billing.d,
 * generated from it: billing_request_*, billing_transaction_*,
 * billing_db_query_*, billing_gateway_call_*.  begin takes the -start
 * probe's arguments; end takes the -done probe's status and returns the
 * duration it reported (0: not measured). */
#include "billing/timing_gen.h"

#ifdef __cplusplus
}
#endif

#endif /* BILLING_TIMING_H */
