/*
 * validate.h -- turn a request body into checked values, or into the 4xx
 * reply that says what is wrong with it.
 *
 * Each function returns 0 and fills *out, or returns -1 and fills *err
 * with a 400 reply (which has fired the error probe, component
 * "validation").  Nothing is written anywhere before validation passes.
 */
#ifndef BILLINGD_VALIDATE_H
#define BILLINGD_VALIDATE_H

#include <jansson.h>
#include <stdint.h>

#include "request.h"

/* Largest amount billingd takes: 10^13 minor units leaves sums of amounts
 * far from int64 overflow. */
#define BILLINGD_MAX_AMOUNT_MINOR 10000000000000LL

/* One field a request body must carry, and where its checked value goes. */
typedef enum {
	FIELD_ID,       /* a positive integer ID */
	FIELD_AMOUNT,   /* minor units, 1..BILLINGD_MAX_AMOUNT_MINOR */
	FIELD_CURRENCY, /* an active ISO 4217 code, upper case */
	FIELD_ENUM      /* one of allowed[] (NULL-terminated) */
} field_kind_t;

typedef struct {
	const char *key;
	field_kind_t kind;
	int64_t *number; /* FIELD_ID, FIELD_AMOUNT */
	/* FIELD_ENUM: the allowed[] entry; FIELD_CURRENCY: the currency table's
	 * code.  Both outlive the body and are static (a stats label cached by
	 * address). */
	const char **text;
	const char *const *allowed; /* FIELD_ENUM */
	const char *error_code;     /* FIELD_ENUM: the code when the value is not allowed */
} field_t;

/* The request's body must be one JSON object carrying each of
 * fields[0..n-1]; the first one missing or wrong decides the 400. */
int validate_request(const request_t *rq, const field_t *fields, size_t n, reply_t *err);

/* An ID in a URL path: decimal digits only, 1..INT64_MAX. */
int validate_path_id(const request_t *rq, const char *text, int64_t *out, reply_t *err);

#endif /* BILLINGD_VALIDATE_H */
