/*
 * handler_payments.c -- POST /payments/authorize: ask the card gateway,
 * record its answer.
 *
 * The gateway is called outside any database transaction, so its latency
 * never holds SQLite's write lock; the invoice is checked before the call
 * (no pointless authorisation) and again inside the transaction that
 * records the result (another payment may have landed meanwhile).
 */
#include "billing/probes.h"
#include "billing/timing.h"
#include "db.h"
#include "gateway.h"
#include "handlers.h"
#include "reply.h"
#include "validate.h"

/* The 4xx for an invoice that cannot take this payment, or a zero reply. */
static reply_t check_invoice(const request_t *rq, db_status_t s, const invoice_row_t *inv,
                             int64_t amount_minor, const char *currency)
{
	reply_t none = { 0, NULL, NULL };
	if (s == DB_NOT_FOUND)
		return reply_error(rq, 404, "lookup", "invoice_not_found", "no invoice has this id");
	if (s == DB_BUSY)
		return reply_db_busy(rq);
	if (s != DB_OK)
		return reply_db_failed(rq);
	if (inv->currency[0] != currency[0] || inv->currency[1] != currency[1] ||
	    inv->currency[2] != currency[2])
		return reply_error(rq, 422, "business", "currency_mismatch",
		                   "the payment's currency differs from the invoice's");
	if (inv->paid_minor >= inv->amount_minor)
		return reply_error(rq, 409, "business", "invoice_already_paid",
		                   "the invoice is paid in full");
	if (amount_minor > inv->amount_minor - inv->paid_minor)
		return reply_error(rq, 422, "business", "amount_exceeds_balance",
		                   "the amount is more than what is left to pay");
	return none;
}

static reply_t recording_failed(const request_t *rq, db_status_t s)
{
	switch (s) {
	case DB_INVOICE_PAID:
		/* A real service would void the authorisation at the gateway here. */
		return reply_error(rq, 409, "business", "invoice_already_paid",
		                   "the invoice was paid in full meanwhile");
	case DB_EXCEEDS_BALANCE:
		return reply_error(rq, 422, "business", "amount_exceeds_balance",
		                   "the amount is more than what is left to pay");
	case DB_NOT_FOUND:
		return reply_error(rq, 404, "lookup", "invoice_not_found", "no invoice has this id");
	case DB_BUSY:
		return reply_db_busy(rq);
	default:
		return reply_db_failed(rq);
	}
}

reply_t handle_payment_authorize(const request_t *rq, const char *path_arg, const char *body,
                                 size_t body_len)
{
	billing_transaction_t tx;
	invoice_row_t inv;
	payment_row_t pay;
	int64_t invoice_id, amount_minor;
	char currency[4];
	const char *gateway;
	uint64_t auth_start, auth_ns;
	int result;
	json_t *doc;
	reply_t err;
	db_status_t s;
	db_t *db;
	(void)path_arg;

	if (validate_body(rq, body, body_len, &doc, &err) != 0)
		return err;
	if (validate_id_field(rq, doc, "invoice_id", &invoice_id, &err) != 0 ||
	    validate_amount_field(rq, doc, "amount_minor", &amount_minor, &err) != 0 ||
	    validate_currency_field(rq, doc, "currency", currency, &err) != 0 ||
	    validate_enum_field(rq, doc, "gateway", gateway_names, "unknown_gateway", &gateway,
	                        &err) != 0) {
		json_decref(doc);
		return err;
	}
	json_decref(doc);

	db = db_for_thread();
	if (db == NULL)
		return reply_db_failed(rq);
	s = db_invoice_get(db, rq->id, invoice_id, &inv);
	err = check_invoice(rq, s, &inv, amount_minor, currency);
	if (err.status != 0)
		return err;

	billing_transaction_begin(&tx, next_transaction_id(), "payment", amount_minor, currency);
	auth_start = billing_clock_if(BILLING_PAYMENT_AUTH_ENABLED());
	result = gateway_authorize(rq->id, gateway, amount_minor, currency);
	auth_ns = billing_elapsed_ns(auth_start);

	s = db_payment_record(db, rq->id, invoice_id, amount_minor, currency, gateway, result, &pay);
	if (s != DB_OK) {
		err = recording_failed(rq, s);
		billing_transaction_end(&tx, (int32_t)err.status);
		return err;
	}
	/* Fired once the answer is stored, so the probe counts what the books hold. */
	BILLING_PAYMENT_AUTH((uint64_t)pay.id, amount_minor, currency, gateway, result, auth_ns);
	billing_transaction_end(&tx, 0);

	return reply_json(201, json_pack("{s:I,s:I,s:I,s:s,s:s,s:s,s:i,s:s}",
	                                 "id", (json_int_t)pay.id,
	                                 "invoice_id", (json_int_t)invoice_id,
	                                 "amount_minor", (json_int_t)amount_minor,
	                                 "currency", currency,
	                                 "gateway", gateway,
	                                 "status", result == 0 ? "approved" : "declined",
	                                 "decline_code", result,
	                                 "decline_reason", gateway_decline_name(result)));
}
