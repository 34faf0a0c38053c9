/*
 * handler_payments.c -- POST /payments/authorize: ask the card gateway,
 * record its answer.
 *
 * The gateway is called outside any database transaction, so its latency
 * never holds SQLite's write lock; the invoice is checked before the call
 * (no pointless authorisation) and again inside the transaction that
 * records the result (another payment may have landed meanwhile).
 */
#include <string.h>

#include "billing/probes.h"
#include "billing/timing.h"
#include "db.h"
#include "gateway.h"
#include "handlers.h"
#include "reply.h"
#include "validate.h"

/* A real service would void the authorisation at the gateway when recording
 * finds the invoice paid meanwhile. */
static const refusal_t refusals[] = {
	{ DB_NOT_FOUND, 404, "lookup", "invoice_not_found", "no invoice has this id" },
	{ DB_INVOICE_PAID, 409, "business", "invoice_already_paid",
	  "the invoice is paid in full" },
	{ DB_EXCEEDS_BALANCE, 422, "business", "amount_exceeds_balance",
	  "the amount is more than what is left to pay" },
};

/* The 4xx for an invoice that cannot take this payment, or a zero reply. */
static reply_t check_invoice(const request_t *rq, db_status_t s, const invoice_row_t *inv,
                             int64_t amount_minor, const char *currency)
{
	reply_t none = { 0, NULL, NULL };
	if (s == DB_OK && memcmp(inv->currency, currency, 3) != 0)
		return reply_error(rq, 422, "business", "currency_mismatch",
		                   "the payment's currency differs from the invoice's");
	if (s == DB_OK)
		s = db_invoice_can_take(inv, amount_minor);
	return s == DB_OK ? none : reply_db_refusal(rq, s, refusals, COUNT_OF(refusals));
}

reply_t handle_payment_authorize(const request_t *rq)
{
	billing_transaction_t tx;
	invoice_row_t inv;
	payment_row_t pay;
	int64_t invoice_id, amount_minor;
	const char *currency, *gateway;
	uint64_t auth_ns;
	int result;
	const field_t fields[] = {
		{ "invoice_id", FIELD_ID, .number = &invoice_id },
		{ "amount_minor", FIELD_AMOUNT, .number = &amount_minor },
		{ "currency", FIELD_CURRENCY, .text = &currency },
		{ "gateway", FIELD_ENUM, .text = &gateway, .allowed = gateway_names,
		  .error_code = "unknown_gateway" },
	};
	reply_t err;
	db_status_t s;
	db_t *db;

	if (validate_request(rq, fields, COUNT_OF(fields), &err) != 0 ||
	    (db = db_for_request(rq, &err)) == NULL)
		return err;
	s = db_invoice_get(db, rq->id, invoice_id, &inv);
	err = check_invoice(rq, s, &inv, amount_minor, currency);
	if (err.status != 0)
		return err;

	billing_transaction_begin(&tx, next_transaction_id(), "payment", amount_minor, currency);
	/* payment-auth times the gateway call: the same interval as gateway-call-done */
	result = gateway_authorize(rq->id, gateway, amount_minor, currency,
	                           BILLING_PAYMENT_AUTH_ENABLED(), &auth_ns);

	s = db_payment_record(db, rq->id, invoice_id, amount_minor, currency, gateway, result, &pay);
	if (s != DB_OK) {
		err = reply_db_refusal(rq, s, refusals, COUNT_OF(refusals));
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
