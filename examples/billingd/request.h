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
	const char *path_arg;   /* the {id} of /invoices/{id}, else "" */
	const char *body;       /* NUL-terminated, may hold NULs */
	size_t body_len;
} request_t;

typedef struct reply {
	unsigned int status; /* HTTP status */
	char *body;          /* malloc'd JSON text, owned by the reply */
	const char *allow;   /* Allow header of a 405, else NULL */
} reply_t;

/* A handler: called once the whole request body has arrived. */
typedef reply_t (*handler_fn)(const request_t *rq);

#endif /* BILLINGD_REQUEST_H */
