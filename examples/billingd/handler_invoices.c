/*
 * handler_invoices.c -- POST /invoices and GET /invoices/{id}.
 */
#include "billing/probes.h"
#include "billing/timing.h"
#include "db.h"
#include "handlers.h"
#include "reply.h"
#include "validate.h"

static json_t *invoice_json(const invoice_row_t *inv)
{
	return json_pack("{s:I,s:I,s:I,s:s,s:I,s:s}",
	                 "id", (json_int_t)inv->id,
	                 "customer_id", (json_int_t)inv->customer_id,
	                 "amount_minor", (json_int_t)inv->amount_minor,
	                 "currency", inv->currency,
	                 "paid_minor", (json_int_t)inv->paid_minor,
	                 "status", inv->status);
}

reply_t handle_invoice_create(const request_t *rq)
{
	billing_transaction_t tx;
	invoice_row_t inv;
	int64_t customer_id, amount_minor;
	const char *currency;
	const field_t fields[] = {
		{ "customer_id", FIELD_ID, .number = &customer_id },
		{ "amount_minor", FIELD_AMOUNT, .number = &amount_minor },
		{ "currency", FIELD_CURRENCY, .text = &currency },
	};
	reply_t err;
	db_status_t s;
	db_t *db;

	if (validate_request(rq, fields, COUNT_OF(fields), &err) != 0 ||
	    (db = db_for_request(rq, &err)) == NULL)
		return err;
	billing_transaction_begin(&tx, next_transaction_id(), "invoice", amount_minor, currency);
	s = db_invoice_insert(db, rq->id, customer_id, amount_minor, currency, &inv);
	if (s != DB_OK) {
		err = reply_db_refusal(rq, s, NULL, 0);
		billing_transaction_end(&tx, (int32_t)err.status);
		return err;
	}
	BILLING_INVOICE_CREATE((uint64_t)inv.id, (uint64_t)customer_id, amount_minor, currency);
	billing_transaction_end(&tx, 0);
	return reply_json(201, invoice_json(&inv));
}

reply_t handle_invoice_get(const request_t *rq)
{
	static const refusal_t refusals[] = {
		{ DB_NOT_FOUND, 404, "lookup", "invoice_not_found", "no invoice has this id" },
	};
	invoice_row_t inv;
	int64_t id;
	reply_t err;
	db_status_t s;
	db_t *db;

	if (validate_path_id(rq, rq->path_arg, &id, &err) != 0 ||
	    (db = db_for_request(rq, &err)) == NULL)
		return err;
	s = db_invoice_get(db, rq->id, id, &inv);
	if (s != DB_OK)
		return reply_db_refusal(rq, s, refusals, COUNT_OF(refusals));
	return reply_json(200, invoice_json(&inv));
}
