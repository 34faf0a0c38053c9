/*
 * reply.h -- build JSON replies; every error reply fires the error probe.
 */
#ifndef BILLINGD_REPLY_H
#define BILLINGD_REPLY_H

#include <jansson.h>

#include "request.h"

/* Serialises obj (and drops the reference to it). */
reply_t reply_json(unsigned int status, json_t *obj);

/* {"error": {"code": code, "message": message}} with the given HTTP status,
 * after firing error(request_id, component, status). */
reply_t reply_error(const request_t *rq, unsigned int status, const char *component,
                    const char *code, const char *message);

/* The 503 every handler answers when the database stays locked. */
reply_t reply_db_busy(const request_t *rq);
/* The 500 for any other database failure. */
reply_t reply_db_failed(const request_t *rq);

#endif /* BILLINGD_REPLY_H */
