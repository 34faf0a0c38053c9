/*
 * request.h -- one HTTP request being served, and the reply a handler makes.
 */
#ifndef BILLINGD_REQUEST_H
#define BILLINGD_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "billing/timing.h"

typedef struct request {
	uint64_t id;            /* opaque, from a process-wide counter */
	const char *handler;    /* static string, e.g. "payment.authorize" */
	billing_request_t span; /* request-start/-done */
} request_t;

typedef struct reply {
	unsigned int status; /* HTTP status */
	char *body;          /* malloc'd JSON text, owned by the reply */
	const char *allow;   /* Allow header of a 405, else NULL */
} reply_t;

/* A handler: the request, the path's argument (the {id} of /invoices/{id},
 * else ""), and the request body (NUL-terminated, may hold NULs). */
typedef reply_t (*handler_fn)(const request_t *rq, const char *path_arg,
                              const char *body, size_t body_len);

#endif /* BILLINGD_REQUEST_H */
