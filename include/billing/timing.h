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
 * traced, so untraced timing costs two semaphore loads.  A span that began
 * before tracing started reports duration_ns 0 ("not measured").
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

/* billing_clock_ns() when wanted is non-zero, else 0: for probes timed by
 * hand, e.g. t0 = billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED()). */
uint64_t billing_clock_if(int wanted);

/* Nanoseconds since start_ns, or 0 when start_ns is 0 (not clocked). */
uint64_t billing_elapsed_ns(uint64_t start_ns);

typedef struct billing_request {
	uint64_t request_id;
	const char *handler;
	uint64_t start_ns;
} billing_request_t;

void billing_request_begin(billing_request_t *r, uint64_t request_id, const char *handler);
/* Fires request-done; returns the duration it reported (0: not measured). */
uint64_t billing_request_end(billing_request_t *r, int32_t status);

typedef struct billing_transaction {
	uint64_t tx_id;
	const char *kind;
	uint64_t start_ns;
} billing_transaction_t;

void billing_transaction_begin(billing_transaction_t *t, uint64_t tx_id, const char *kind,
                               int64_t amount_minor, const char *currency);
uint64_t billing_transaction_end(billing_transaction_t *t, int32_t status);

typedef struct billing_db_query {
	uint64_t request_id;
	const char *operation;
	uint64_t start_ns;
} billing_db_query_t;

void billing_db_query_begin(billing_db_query_t *q, uint64_t request_id, const char *operation);
uint64_t billing_db_query_end(billing_db_query_t *q, int32_t status);

typedef struct billing_gateway_call {
	uint64_t request_id;
	const char *gateway;
	const char *operation;
	uint64_t start_ns;
} billing_gateway_call_t;

void billing_gateway_call_begin(billing_gateway_call_t *g, uint64_t request_id,
                                const char *gateway, const char *operation);
uint64_t billing_gateway_call_end(billing_gateway_call_t *g, int32_t status);

#ifdef __cplusplus
}
#endif

#endif /* BILLING_TIMING_H */
