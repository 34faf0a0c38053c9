/*
 * handler_refunds.c -- POST /refunds: give back part or all of a captured
 * payment, never more than was captured.
 */
#include "billing/probes.h"
#include "billing/timing.h"
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

static reply_t refusal(const request_t *rq, db_status_t s)
{
	switch (s) {
	case DB_NOT_FOUND:
		return reply_error(rq, 404, "lookup", "payment_not_found", "no payment has this id");
	case DB_NOT_CAPTURED:
		return reply_error(rq, 409, "business", "payment_not_captured",
		                   "the payment was declined: there is nothing to refund");
	case DB_EXCEEDS_CAPTURED:
		return reply_error(rq, 422, "business", "refund_exceeds_captured",
		                   "the refunds would exceed what was captured");
	case DB_BUSY:
		return reply_db_busy(rq);
	default:
		return reply_db_failed(rq);
	}
}

reply_t handle_refund_create(const request_t *rq, const char *path_arg, const char *body,
                             size_t body_len)
{
	billing_transaction_t tx;
	payment_row_t pay;
	refund_row_t ref;
	int64_t payment_id, amount_minor;
	const char *reason;
	json_t *doc;
	reply_t err;
	db_status_t s;
	db_t *db;
	(void)path_arg;

	if (validate_body(rq, body, body_len, &doc, &err) != 0)
		return err;
	if (validate_id_field(rq, doc, "payment_id", &payment_id, &err) != 0 ||
	    validate_amount_field(rq, doc, "amount_minor", &amount_minor, &err) != 0 ||
	    validate_enum_field(rq, doc, "reason", refund_reasons, "invalid_reason", &reason,
	                        &err) != 0) {
		json_decref(doc);
		return err;
	}
	json_decref(doc);

	db = db_for_thread();
	if (db == NULL)
		return reply_db_failed(rq);
	/* Look first, so a refund that cannot be never reaches the gateway. */
	s = db_payment_get(db, rq->id, payment_id, &pay);
	if (s == DB_OK && pay.decline_code != 0)
		s = DB_NOT_CAPTURED;
	else if (s == DB_OK && amount_minor > pay.amount_minor - pay.refunded_minor)
		s = DB_EXCEEDS_CAPTURED;
	if (s != DB_OK)
		return refusal(rq, s);

	billing_transaction_begin(&tx, next_transaction_id(), "refund", amount_minor, pay.currency);
	gateway_refund(rq->id, pay.gateway, amount_minor, pay.currency);
	s = db_refund_record(db, rq->id, payment_id, amount_minor, reason, &ref);
	if (s != DB_OK) {
		err = refusal(rq, s);
		billing_transaction_end(&tx, (int32_t)err.status);
		return err;
	}
	BILLING_REFUND_PROCESS((uint64_t)ref.id, (uint64_t)payment_id, amount_minor, ref.currency,
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
