/*
 * scenario.c -- customer flows and bad requests.
 */
#include "scenario.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* One bad request, with the answer billingd must give it. */
typedef struct invalid_case {
	const char *method;
	const char *path;
	const char *body; /* NULL: none; OVERSIZED: more than billingd takes */
	unsigned int status;
	const char *code;
} invalid_case_t;

static const char oversized_marker[] = "oversized";
#define OVERSIZED oversized_marker
#define OVERSIZED_LEN 20000

static const invalid_case_t invalid_cases[] = {
	{ "POST", "/invoices", "{\"customer_id\": 1, \"amount_minor\": ", 400, "malformed_json" },
	{ "POST", "/invoices", "[1, 2, 3]", 400, "not_an_object" },
	{ "POST", "/invoices", "{\"amount_minor\":100,\"currency\":\"EUR\"}", 400, "missing_field" },
	{ "POST", "/invoices", "{\"customer_id\":1,\"amount_minor\":-500,\"currency\":\"EUR\"}", 400,
	  "invalid_amount" },
	{ "POST", "/invoices", "{\"customer_id\":1,\"amount_minor\":12.5,\"currency\":\"EUR\"}", 400,
	  "invalid_amount" },
	{ "POST", "/invoices",
	  "{\"customer_id\":1,\"amount_minor\":92233720368547758070,\"currency\":\"EUR\"}", 400,
	  "number_out_of_range" },
	{ "POST", "/invoices",
	  "{\"customer_id\":1,\"amount_minor\":100000000000000,\"currency\":\"EUR\"}", 400,
	  "amount_out_of_range" },
	{ "POST", "/invoices", "{\"customer_id\":1,\"amount_minor\":100,\"currency\":\"ZZZ\"}", 400,
	  "unknown_currency" },
	{ "POST", "/payments/authorize",
	  "{\"invoice_id\":1,\"amount_minor\":100,\"currency\":\"EUR\",\"gateway\":\"nope\"}", 400,
	  "unknown_gateway" },
	{ "POST", "/payments/authorize",
	  "{\"invoice_id\":999999999999,\"amount_minor\":100,\"currency\":\"EUR\","
	  "\"gateway\":\"stripe-sim\"}",
	  404, "invoice_not_found" },
	{ "POST", "/refunds", "{\"payment_id\":999999999999,\"amount_minor\":100,"
	                      "\"reason\":\"duplicate\"}",
	  404, "payment_not_found" },
	{ "POST", "/refunds", "{\"payment_id\":1,\"amount_minor\":100,\"reason\":\"because\"}", 400,
	  "invalid_reason" },
	{ "GET", "/invoices/999999999999", NULL, 404, "invoice_not_found" },
	{ "GET", "/invoices/abc", NULL, 400, "invalid_id" },
	{ "POST", "/invoices", OVERSIZED, 413, "body_too_large" },
	{ "DELETE", "/invoices", NULL, 405, "method_not_allowed" },
	{ "GET", "/no/such/thing", NULL, 404, "not_found" },
};
#define INVALID_CASES (sizeof(invalid_cases) / sizeof(invalid_cases[0]))

static const char *const currencies[] = { "EUR", "USD", "GBP", "JPY", "CHF", "SEK" };
static const char *const gateways[] = { "stripe-sim", "adyen-sim", "braintree-sim" };
static const char *const reasons[] = { "duplicate", "fraud", "requested_by_customer" };
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char oversized_body[OVERSIZED_LEN + 1];

static uint64_t rnd(session_t *s)
{
	uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double unit(session_t *s)
{
	return (double)(rnd(s) >> 11) * (1.0 / 9007199254740992.0);
}

void scenario_init(session_t *s, uint64_t seed, unsigned int index)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed * 0x2545F4914F6CDD1Dull + index + 1;
	if (oversized_body[0] == '\0') {
		/* A well-formed JSON object, just too big. */
		memset(oversized_body, 'a', OVERSIZED_LEN);
		memcpy(oversized_body, "{\"customer_id\":1,\"note\":\"", 25);
		memcpy(oversized_body + OVERSIZED_LEN - 2, "\"}", 2);
		oversized_body[OVERSIZED_LEN] = '\0';
	}
}

static void set_body(http_request_t *req, int len)
{
	req->body = req->body_buf;
	req->body_len = len > 0 && (size_t)len < sizeof(req->body_buf) ? (size_t)len : 0;
}

static void start_flow(session_t *s, const load_options_t *opts)
{
	if (unit(s) < opts->invalid_rate) {
		s->step = STEP_INVALID;
		s->invalid_case = (size_t)(rnd(s) % INVALID_CASES);
		return;
	}
	s->step = STEP_CREATE_INVOICE;
	s->customer_id = (int64_t)(rnd(s) % 100000) + 1;
	s->amount_minor = (int64_t)(rnd(s) % 99901) + 100;
	s->currency = currencies[rnd(s) % COUNT(currencies)];
	s->gateway = gateways[rnd(s) % COUNT(gateways)];
	s->invoice_id = s->payment_id = s->refunded_minor = 0;
}

void scenario_next(session_t *s, const load_options_t *opts, http_request_t *req)
{
	const invalid_case_t *c;
	int64_t amount;

	if (s->step == STEP_NONE)
		start_flow(s, opts);
	req->body = NULL;
	req->body_len = 0;
	switch (s->step) {
	case STEP_CREATE_INVOICE:
		req->method = "POST";
		snprintf(req->path, sizeof(req->path), "/invoices");
		set_body(req, snprintf(req->body_buf, sizeof(req->body_buf),
		                       "{\"customer_id\":%lld,\"amount_minor\":%lld,\"currency\":\"%s\"}",
		                       (long long)s->customer_id, (long long)s->amount_minor,
		                       s->currency));
		break;
	case STEP_AUTHORIZE:
		req->method = "POST";
		snprintf(req->path, sizeof(req->path), "/payments/authorize");
		set_body(req, snprintf(req->body_buf, sizeof(req->body_buf),
		                       "{\"invoice_id\":%lld,\"amount_minor\":%lld,\"currency\":\"%s\","
		                       "\"gateway\":\"%s\"}",
		                       (long long)s->invoice_id, (long long)s->amount_minor,
		                       s->currency, s->gateway));
		break;
	case STEP_REFUND:
	case STEP_OVER_REFUND:
		if (s->step == STEP_OVER_REFUND)
			amount = s->amount_minor - s->refunded_minor + 1;
		else if (unit(s) < 0.5)
			amount = s->amount_minor - s->refunded_minor; /* the rest */
		else
			amount = (s->amount_minor - s->refunded_minor + 1) / 2;
		req->method = "POST";
		snprintf(req->path, sizeof(req->path), "/refunds");
		set_body(req, snprintf(req->body_buf, sizeof(req->body_buf),
		                       "{\"payment_id\":%lld,\"amount_minor\":%lld,\"reason\":\"%s\"}",
		                       (long long)s->payment_id, (long long)amount,
		                       reasons[rnd(s) % COUNT(reasons)]));
		s->refunded_minor += s->step == STEP_REFUND ? amount : 0; /* undone if refused */
		break;
	case STEP_READ_INVOICE:
		req->method = "GET";
		snprintf(req->path, sizeof(req->path), "/invoices/%lld", (long long)s->invoice_id);
		break;
	case STEP_INVALID:
	default:
		c = &invalid_cases[s->invalid_case];
		req->method = c->method;
		snprintf(req->path, sizeof(req->path), "%s", c->path);
		if (c->body == OVERSIZED) {
			req->body = oversized_body;
			req->body_len = OVERSIZED_LEN;
		} else if (c->body != NULL) {
			req->body = c->body;
			req->body_len = strlen(c->body);
		}
		break;
	}
}

/* The error code of a JSON error body, or "" when it has none. */
static void error_code_of(json_t *doc, char *out, size_t size)
{
	const char *code = json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
	snprintf(out, size, "%s", code ? code : "");
}

static void after_payment(session_t *s, const load_options_t *opts, int approved)
{
	if (approved && unit(s) < opts->refund_rate)
		s->step = STEP_REFUND;
	else if (unit(s) < 0.2)
		s->step = STEP_READ_INVOICE;
	else
		s->step = STEP_NONE;
}

void scenario_judge(session_t *s, const load_options_t *opts, long status, const char *body,
                    size_t body_len, stats_t *st)
{
	json_t *doc = json_loadb(body, body_len, 0, NULL);
	const char *state;
	char code[40] = "";
	step_t was = s->step;
	int expected = 0;

	st->responses++;
	if (status >= 500)
		st->server_errors++;
	if (status >= 400 && status < 500) {
		error_code_of(doc, code, sizeof(code));
		stats_add_rejection(st, (unsigned int)status, code[0] ? code : "(no code)");
	}
	s->step = STEP_NONE; /* unless the flow goes on below */

	switch (was) {
	case STEP_CREATE_INVOICE:
		if (status == 201 && json_integer_value(json_object_get(doc, "id")) > 0) {
			st->invoices_created++;
			s->invoice_id = json_integer_value(json_object_get(doc, "id"));
			s->step = STEP_AUTHORIZE;
			expected = 1;
		}
		break;
	case STEP_AUTHORIZE:
		state = json_string_value(json_object_get(doc, "status"));
		if (status == 201 && state != NULL) {
			int approved = strcmp(state, "approved") == 0;
			int declined = strcmp(state, "declined") == 0;
			s->payment_id = json_integer_value(json_object_get(doc, "id"));
			st->payments_approved += approved;
			st->payments_declined += declined;
			expected = approved || declined;
			if (expected)
				after_payment(s, opts, approved);
		}
		break;
	case STEP_REFUND:
		if (status == 201) {
			st->refunds++;
			expected = 1;
			if (s->refunded_minor < s->amount_minor && unit(s) < 0.5)
				s->step = STEP_REFUND;
			else if (unit(s) < 0.25)
				s->step = STEP_OVER_REFUND;
		}
		break;
	case STEP_OVER_REFUND:
		expected = status == 422 && strcmp(code, "refund_exceeds_captured") == 0;
		break;
	case STEP_READ_INVOICE:
		if (status == 200 && json_integer_value(json_object_get(doc, "id")) == s->invoice_id) {
			st->invoice_reads++;
			expected = 1;
		}
		break;
	case STEP_INVALID:
		expected = status == (long)invalid_cases[s->invalid_case].status &&
		           strcmp(code, invalid_cases[s->invalid_case].code) == 0;
		break;
	case STEP_NONE:
	default:
		break;
	}
	if (!expected) {
		st->unexpected++;
		s->step = STEP_NONE;
	}
	json_decref(doc);
}

void scenario_abort(session_t *s)
{
	s->step = STEP_NONE;
}
