/*
 * handler_refunds.c -- POST /refunds: give back part or all of a captured
 * payment, never more than was captured.
 */
#include "billing/probes.h"
#include "billing/timing.h"
#include "currency.h"
#include "db.h"
#include "gateway.h"
#include "handlers.h"
#include "reply.h"
#include "validate.h"

static const char *const refund_reasons[] = {
	"duplicate",
	"fraud",
	"requested_by_customer",
	NULL,
};

static const refusal_t refusals[] = {
	{ DB_NOT_FOUND, 404, "lookup", "payment_not_found", "no payment has this id" },
	{ DB_NOT_CAPTURED, 409, "business", "payment_not_captured",
	  "the payment was declined: there is nothing to refund" },
	{ DB_EXCEEDS_CAPTURED, 422, "business", "refund_exceeds_captured",
	  "the refunds would exceed what was captured" },
};

reply_t handle_refund_create(const request_t *rq)
{
	billing_transaction_t tx;
	payment_row_t pay;
	refund_row_t ref;
	int64_t payment_id, amount_minor;
	const char *reason, *currency_text;
	const field_t fields[] = {
		{ "payment_id", FIELD_ID, .number = &payment_id },
		{ "amount_minor", FIELD_AMOUNT, .number = &amount_minor },
		{ "reason", FIELD_ENUM, .text = &reason, .allowed = refund_reasons,
		  .error_code = "invalid_reason" },
	};
	reply_t err;
	db_status_t s;
	db_t *db;

	if (validate_request(rq, fields, COUNT_OF(fields), &err) != 0 ||
	    (db = db_for_request(rq, &err)) == NULL)
		return err;
	/* Look first, so a refund that cannot be never reaches the gateway. */
	s = db_payment_get(db, rq->id, payment_id, &pay);
	if (s == DB_OK)
		s = db_payment_can_refund(&pay, amount_minor);
	if (s != DB_OK)
		return reply_db_refusal(rq, s, refusals, COUNT_OF(refusals));

	currency_text = currency_label(pay.currency);
	billing_transaction_begin(&tx, next_transaction_id(), "refund", amount_minor, currency_text);
	gateway_refund(rq->id, gateway_label(pay.gateway), amount_minor, currency_text);
	s = db_refund_record(db, rq->id, payment_id, amount_minor, reason, &ref);
	if (s != DB_OK) {
		err = reply_db_refusal(rq, s, refusals, COUNT_OF(refusals));
		billing_transaction_end(&tx, (int32_t)err.status);
		return err;
	}
	/* ref.currency is the payment's: the same label */
	BILLING_REFUND_PROCESS((uint64_t)ref.id, (uint64_t)payment_id, amount_minor, currency_text,
	                       reason);
	billing_transaction_end(&tx, 0);

	return reply_json(201, json_pack("{s:I,s:I,s:I,s:s,s:s,s:I}",
	                                 "id", (json_int_t)ref.id,
	                                 "payment_id", (json_int_t)payment_id,
	                                 "amount_minor", (json_int_t)amount_minor,
	                                 "currency", ref.currency,
	                                 "reason", reason,
	                                 "refunded_total_minor",
	                                 (json_int_t)ref.refunded_total_minor));
}
