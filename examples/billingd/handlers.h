/*
 * handlers.h -- one handler per resource; the router calls them with the
 * whole request body once it has arrived.
 */
#ifndef BILLINGD_HANDLERS_H
#define BILLINGD_HANDLERS_H

#include <stdint.h>

#include "request.h"

reply_t handle_invoice_create(const request_t *rq);
reply_t handle_invoice_get(const request_t *rq);
reply_t handle_payment_authorize(const request_t *rq);
reply_t handle_refund_create(const request_t *rq);
reply_t handle_health(const request_t *rq);

/* How many entries a table (an array, not a pointer) holds. */
#define COUNT_OF(table) (sizeof(table) / sizeof((table)[0]))

/* Opaque IDs from process-wide atomic counters: no lock, never reused. */
uint64_t next_request_id(void);
uint64_t next_transaction_id(void);

#endif /* BILLINGD_HANDLERS_H */
