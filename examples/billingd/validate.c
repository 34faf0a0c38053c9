/*
 * validate.c -- request validation.
 */
#include "validate.h"

#include <stdio.h>
#include <string.h>

#include "currency.h"
#include "reply.h"

static int fail(const request_t *rq, reply_t *err, const char *code, const char *message)
{
	*err = reply_error(rq, 400, "validation", code, message);
	return -1;
}

static int fail_field(const request_t *rq, reply_t *err, const char *code, const char *key,
                      const char *what)
{
	char message[160];
	snprintf(message, sizeof(message), "%s %s", key, what);
	return fail(rq, err, code, message);
}

static int parse_object(const request_t *rq, const char *body, size_t len, json_t **out,
                        reply_t *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL) {
		if (json_error_code(&jerr) == json_error_numeric_overflow)
			return fail(rq, err, "number_out_of_range",
			            "a number in the body does not fit a 64-bit integer");
		return fail(rq, err, "malformed_json", "the body is not valid JSON");
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		return fail(rq, err, "not_an_object", "the body must be a JSON object");
	}
	*out = doc;
	return 0;
}

static json_t *required(const request_t *rq, json_t *obj, const char *key, reply_t *err)
{
	json_t *v = json_object_get(obj, key);
	if (v == NULL || json_is_null(v))
		fail_field(rq, err, "missing_field", key, "is required");
	return v && !json_is_null(v) ? v : NULL;
}

static int id_field(const request_t *rq, json_t *obj, const char *key, int64_t *out,
                    reply_t *err)
{
	json_t *v = required(rq, obj, key, err);
	if (v == NULL)
		return -1;
	if (!json_is_integer(v) || json_integer_value(v) <= 0)
		return fail_field(rq, err, "invalid_field", key, "must be a positive integer");
	*out = (int64_t)json_integer_value(v);
	return 0;
}

static int amount_field(const request_t *rq, json_t *obj, const char *key, int64_t *out,
                        reply_t *err)
{
	json_t *v = required(rq, obj, key, err);
	json_int_t amount;
	if (v == NULL)
		return -1;
	if (!json_is_integer(v))
		return fail_field(rq, err, "invalid_amount", key,
		                  "must be an integer count of minor units");
	amount = json_integer_value(v);
	if (amount <= 0)
		return fail_field(rq, err, "invalid_amount", key, "must be positive");
	if (amount > BILLINGD_MAX_AMOUNT_MINOR)
		return fail_field(rq, err, "amount_out_of_range", key, "is too large");
	*out = (int64_t)amount;
	return 0;
}

static int currency_field(const request_t *rq, json_t *obj, const char *key, const char **out,
                          reply_t *err)
{
	json_t *v = required(rq, obj, key, err);
	const char *code;
	if (v == NULL)
		return -1;
	if (!json_is_string(v))
		return fail_field(rq, err, "invalid_field", key, "must be a string");
	code = json_string_value(v);
	if (json_string_length(v) != 3 || (*out = currency_code(code)) == NULL)
		return fail_field(rq, err, "unknown_currency", key,
		                  "must be an active ISO 4217 code such as \"EUR\"");
	return 0;
}

static int enum_field(const request_t *rq, json_t *obj, const char *key,
                      const char *const *allowed, const char *error_code,
                      const char **out, reply_t *err)
{
	json_t *v = required(rq, obj, key, err);
	const char *text;
	size_t i;
	if (v == NULL)
		return -1;
	if (!json_is_string(v))
		return fail_field(rq, err, "invalid_field", key, "must be a string");
	text = json_string_value(v);
	for (i = 0; allowed[i] != NULL; i++) {
		if (strlen(allowed[i]) == json_string_length(v) && strcmp(allowed[i], text) == 0) {
			*out = allowed[i];
			return 0;
		}
	}
	return fail_field(rq, err, error_code, key, "is not one we know");
}

int validate_path_id(const request_t *rq, const char *text, int64_t *out, reply_t *err)
{
	uint64_t value = 0;
	const char *p;
	if (*text == '\0' || strlen(text) > 19)
		return fail(rq, err, "invalid_id", "the id in the path must be a positive integer");
	for (p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return fail(rq, err, "invalid_id",
			            "the id in the path must be a positive integer");
		value = value * 10 + (uint64_t)(*p - '0');
	}
	if (value == 0 || value > (uint64_t)INT64_MAX)
		return fail(rq, err, "invalid_id", "the id in the path must be a positive integer");
	*out = (int64_t)value;
	return 0;
}

static int validate_field(const request_t *rq, json_t *doc, const field_t *f, reply_t *err)
{
	switch (f->kind) {
	case FIELD_ID:
		return id_field(rq, doc, f->key, f->number, err);
	case FIELD_AMOUNT:
		return amount_field(rq, doc, f->key, f->number, err);
	case FIELD_CURRENCY:
		return currency_field(rq, doc, f->key, f->text, err);
	case FIELD_ENUM:
		return enum_field(rq, doc, f->key, f->allowed, f->error_code, f->text, err);
	}
	return fail_field(rq, err, "invalid_field", f->key, "has no known kind");
}

int validate_request(const request_t *rq, const field_t *fields, size_t n, reply_t *err)
{
	json_t *doc;
	size_t i;
	int rc = 0;
	if (parse_object(rq, rq->body, rq->body_len, &doc, err) != 0)
		return -1;
	for (i = 0; i < n && rc == 0; i++)
		rc = validate_field(rq, doc, &fields[i], err);
	json_decref(doc);
	return rc;
}
