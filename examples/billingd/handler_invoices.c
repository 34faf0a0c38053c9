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

reply_t handle_invoice_create(const request_t *rq, const char *path_arg, const char *body,
                              size_t body_len)
{
	billing_transaction_t tx;
	invoice_row_t inv;
	int64_t customer_id, amount_minor;
	char currency[4];
	json_t *doc;
	reply_t err;
	db_status_t s;
	db_t *db;
	(void)path_arg;

	if (validate_body(rq, body, body_len, &doc, &err) != 0)
		return err;
	if (validate_id_field(rq, doc, "customer_id", &customer_id, &err) != 0 ||
	    validate_amount_field(rq, doc, "amount_minor", &amount_minor, &err) != 0 ||
	    validate_currency_field(rq, doc, "currency", currency, &err) != 0) {
		json_decref(doc);
		return err;
	}
	json_decref(doc);

	db = db_for_thread();
	if (db == NULL)
		return reply_db_failed(rq);
	billing_transaction_begin(&tx, next_transaction_id(), "invoice", amount_minor, currency);
	s = db_invoice_insert(db, rq->id, customer_id, amount_minor, currency, &inv);
	if (s != DB_OK) {
		err = s == DB_BUSY ? reply_db_busy(rq) : reply_db_failed(rq);
		billing_transaction_end(&tx, (int32_t)err.status);
		return err;
	}
	BILLING_INVOICE_CREATE((uint64_t)inv.id, (uint64_t)customer_id, amount_minor, currency);
	billing_transaction_end(&tx, 0);
	return reply_json(201, invoice_json(&inv));
}

reply_t handle_invoice_get(const request_t *rq, const char *path_arg, const char *body,
                           size_t body_len)
{
	invoice_row_t inv;
	int64_t id;
	reply_t err;
	db_status_t s;
	db_t *db;
	(void)body;
	(void)body_len;

	if (validate_path_id(rq, path_arg, &id, &err) != 0)
		return err;
	db = db_for_thread();
	if (db == NULL)
		return reply_db_failed(rq);
	s = db_invoice_get(db, rq->id, id, &inv);
	if (s == DB_NOT_FOUND)
		return reply_error(rq, 404, "lookup", "invoice_not_found", "no invoice has this id");
	if (s != DB_OK)
		return s == DB_BUSY ? reply_db_busy(rq) : reply_db_failed(rq);
	return reply_json(200, invoice_json(&inv));
}
