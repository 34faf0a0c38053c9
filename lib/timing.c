/* Timing helpers: fire start/done probe pairs with an in-process duration,
 * reading the clock only while one probe of the pair is traced. */
#include <time.h>

#include "billing/probes.h"
#include "billing/timing.h"

uint64_t
billing_clock_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
billing_clock_if(int wanted)
{
	return wanted ? billing_clock_ns() : 0;
}

uint64_t
billing_elapsed_ns(uint64_t start_ns)
{
	uint64_t now;

	if (start_ns == 0)
		return 0;
	now = billing_clock_ns();
	/* 0 means "not measured"; a real span is at least 1 ns. */
	return now > start_ns ? now - start_ns : 1;
}

void
billing_request_begin(billing_request_t *r, uint64_t request_id, const char *handler)
{
	r->request_id = request_id;
	r->handler = handler;
	r->start_ns = billing_clock_if(BILLING_REQUEST_START_ENABLED() || BILLING_REQUEST_DONE_ENABLED());
	BILLING_REQUEST_START(request_id, handler);
}

uint64_t
billing_request_end(billing_request_t *r, int32_t status)
{
	uint64_t duration_ns = 0;

	if (BILLING_REQUEST_DONE_ENABLED()) {
		duration_ns = billing_elapsed_ns(r->start_ns);
		BILLING_REQUEST_DONE(r->request_id, r->handler, status, duration_ns);
	}
	return duration_ns;
}

void
billing_transaction_begin(billing_transaction_t *t, uint64_t tx_id, const char *kind,
                          int64_t amount_minor, const char *currency)
{
	t->tx_id = tx_id;
	t->kind = kind;
	t->start_ns = billing_clock_if(BILLING_TRANSACTION_START_ENABLED() ||
	                               BILLING_TRANSACTION_DONE_ENABLED());
	BILLING_TRANSACTION_START(tx_id, kind, amount_minor, currency);
}

uint64_t
billing_transaction_end(billing_transaction_t *t, int32_t status)
{
	uint64_t duration_ns = 0;

	if (BILLING_TRANSACTION_DONE_ENABLED()) {
		duration_ns = billing_elapsed_ns(t->start_ns);
		BILLING_TRANSACTION_DONE(t->tx_id, t->kind, status, duration_ns);
	}
	return duration_ns;
}

void
billing_db_query_begin(billing_db_query_t *q, uint64_t request_id, const char *operation)
{
	q->request_id = request_id;
	q->operation = operation;
	q->start_ns = billing_clock_if(BILLING_DB_QUERY_START_ENABLED() || BILLING_DB_QUERY_DONE_ENABLED());
	BILLING_DB_QUERY_START(request_id, operation);
}

uint64_t
billing_db_query_end(billing_db_query_t *q, int32_t status)
{
	uint64_t duration_ns = 0;

	if (BILLING_DB_QUERY_DONE_ENABLED()) {
		duration_ns = billing_elapsed_ns(q->start_ns);
		BILLING_DB_QUERY_DONE(q->request_id, q->operation, status, duration_ns);
	}
	return duration_ns;
}

void
billing_gateway_call_begin(billing_gateway_call_t *g, uint64_t request_id,
                           const char *gateway, const char *operation)
{
	g->request_id = request_id;
	g->gateway = gateway;
	g->operation = operation;
	g->start_ns = billing_clock_if(BILLING_GATEWAY_CALL_START_ENABLED() ||
	                               BILLING_GATEWAY_CALL_DONE_ENABLED());
	BILLING_GATEWAY_CALL_START(request_id, gateway, operation);
}

uint64_t
billing_gateway_call_end(billing_gateway_call_t *g, int32_t status)
{
	uint64_t duration_ns = 0;

	if (BILLING_GATEWAY_CALL_DONE_ENABLED()) {
		duration_ns = billing_elapsed_ns(g->start_ns);
		BILLING_GATEWAY_CALL_DONE(g->request_id, g->gateway, g->operation, status, duration_ns);
	}
	return duration_ns;
}
