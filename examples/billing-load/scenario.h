/*
 * scenario.h -- the request mix: each connection plays one customer flow
 * after another.  A flow is "create an invoice, authorise a payment for it,
 * sometimes refund part or all of it (and sometimes try to refund too
 * much), sometimes read the invoice back", or, at --invalid-rate, one bad
 * request of a known kind.  Every response is judged against what the
 * flow expects, so the counts are exact and surprises are counted too.
 */
#ifndef BILLING_LOAD_SCENARIO_H
#define BILLING_LOAD_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "stats.h"

typedef enum step {
	STEP_NONE, /* between flows */
	STEP_CREATE_INVOICE,
	STEP_AUTHORIZE,
	STEP_REFUND,
	STEP_OVER_REFUND,
	STEP_READ_INVOICE,
	STEP_INVALID,
} step_t;

typedef struct session {
	uint64_t rng;
	step_t step;
	size_t invalid_case;
	int64_t customer_id, invoice_id, payment_id, amount_minor, refunded_minor;
	const char *currency, *gateway;
} session_t;

#define SCENARIO_BODY_MAX 512

typedef struct http_request {
	const char *method; /* "GET", "POST", "DELETE" */
	char path[96];
	const char *body; /* NULL for no body */
	size_t body_len;
	char body_buf[SCENARIO_BODY_MAX];
} http_request_t;

void scenario_init(session_t *s, uint64_t seed, unsigned int index);

/* The session's next request (starting a new flow when between flows). */
void scenario_next(session_t *s, const load_options_t *opts, http_request_t *req);

/* Counts a response (status, body) and moves the flow on. */
void scenario_judge(session_t *s, const load_options_t *opts, long status, const char *body,
                    size_t body_len, stats_t *stats);

/* The request failed without a response: the flow is dropped. */
void scenario_abort(session_t *s);

#endif /* BILLING_LOAD_SCENARIO_H */
