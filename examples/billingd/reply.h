/*
 * reply.h -- build JSON replies; every error reply fires the error probe.
 */
#ifndef BILLINGD_REPLY_H
#define BILLINGD_REPLY_H

#include <jansson.h>

#include "db.h"
#include "request.h"

/* Serialises obj (and drops the reference to it). */
reply_t reply_json(unsigned int status, json_t *obj);

/* {"error": {"code": code, "message": message}} with the given HTTP status,
 * after firing error(request_id, component, status). */
reply_t reply_error(const request_t *rq, unsigned int status, const char *component,
                    const char *code, const char *message);

/* The 4xx a handler answers for one database outcome. */
typedef struct {
	db_status_t status;
	unsigned int http_status;
	const char *component;
	const char *code;
	const char *message;
} refusal_t;

/* The reply for a database call that did not give DB_OK: the row of
 * refusals[0..n-1] that names s, else the 503 every handler answers when
 * the database stays locked, else 500. */
reply_t reply_db_refusal(const request_t *rq, db_status_t s, const refusal_t *refusals,
                         size_t n);

/* The 500 for a database failure. */
reply_t reply_db_failed(const request_t *rq);

/* The calling thread's database, or NULL with *err the 500. */
db_t *db_for_request(const request_t *rq, reply_t *err);

#endif /* BILLINGD_REPLY_H */
