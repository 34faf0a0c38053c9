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

/* The body must be one JSON object. */
int validate_body(const request_t *rq, const char *body, size_t len, json_t **out,
                  reply_t *err);

/* A positive integer ID field. */
int validate_id_field(const request_t *rq, json_t *obj, const char *key, int64_t *out,
                      reply_t *err);

/* An amount in minor units: integer, 1..BILLINGD_MAX_AMOUNT_MINOR. */
int validate_amount_field(const request_t *rq, json_t *obj, const char *key, int64_t *out,
                          reply_t *err);

/* An active ISO 4217 code, upper case; copied into out[4]. */
int validate_currency_field(const request_t *rq, json_t *obj, const char *key, char out[4],
                            reply_t *err);

/* A string field that must be one of allowed[] (NULL-terminated); *out
 * points at the allowed[] entry, so it outlives the JSON document. */
int validate_enum_field(const request_t *rq, json_t *obj, const char *key,
                        const char *const *allowed, const char *error_code,
                        const char **out, reply_t *err);

/* An ID in a URL path: decimal digits only, 1..INT64_MAX. */
int validate_path_id(const request_t *rq, const char *text, int64_t *out, reply_t *err);

#endif /* BILLINGD_VALIDATE_H */
