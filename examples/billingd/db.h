/*
 * db.h -- billingd's storage: SQLite in WAL mode, one connection per worker
 * thread with its statements prepared once; readers run in parallel
 * (WAL), writers queue on one mutex (see db_ops.c).
 *
 * Every statement fires the db-query pair, named by operation
 * ("invoice.insert"), never by SQL text.  A write that finds the database
 * locked waits busy_timeout, then the whole transaction is retried a few
 * times; if it stays locked the caller gets DB_BUSY and answers 503.
 */
#ifndef BILLINGD_DB_H
#define BILLINGD_DB_H

#include <stddef.h>
#include <stdint.h>

typedef enum db_status {
	DB_OK = 0,
	DB_NOT_FOUND,
	DB_BUSY,             /* still locked after the retries: answer 503 */
	DB_ERROR,            /* any other failure: answer 500 */
	DB_INVOICE_PAID,     /* payment on an invoice already paid in full */
	DB_EXCEEDS_BALANCE,  /* payment larger than what is left to pay */
	DB_NOT_CAPTURED,     /* refund of a payment that was declined */
	DB_EXCEEDS_CAPTURED, /* refund larger than what is left to refund */
} db_status_t;

typedef struct invoice_row {
	int64_t id;
	int64_t customer_id;
	int64_t amount_minor;
	int64_t paid_minor;
	char currency[4];
	char status[8]; /* "open" or "paid" */
} invoice_row_t;

typedef struct payment_row {
	int64_t id;
	int64_t invoice_id;
	int64_t amount_minor;
	int64_t refunded_minor;
	char currency[4];
	char gateway[32];
	int decline_code; /* 0: approved (and captured) */
} payment_row_t;

typedef struct refund_row {
	int64_t id;
	int64_t payment_id;
	int64_t amount_minor;
	int64_t refunded_total_minor; /* of the payment, this refund included */
	char currency[4];
} refund_row_t;

typedef struct db db_t;

/* Opens (creating if needed) the database at path, sets WAL mode and the
 * schema.  Call once before the workers start.  On failure writes one line
 * into errbuf and returns -1. */
int db_init(const char *path, char *errbuf, size_t errlen);

/* The calling thread's connection, opened on first use; NULL on failure. */
db_t *db_for_thread(void);

/* After every worker has stopped: close every connection, checkpoint the
 * WAL into the main file and close it.  Returns 0 when all closed cleanly. */
int db_shutdown(void);

/* The business rules, checked by the handlers before calling the gateway and
 * again inside the transaction that records: can the invoice take a payment
 * of amount_minor (DB_OK, DB_INVOICE_PAID, DB_EXCEEDS_BALANCE); can the
 * payment give back amount_minor (DB_OK, DB_NOT_CAPTURED, DB_EXCEEDS_CAPTURED). */
db_status_t db_invoice_can_take(const invoice_row_t *inv, int64_t amount_minor);
db_status_t db_payment_can_refund(const payment_row_t *pay, int64_t amount_minor);

db_status_t db_invoice_insert(db_t *db, uint64_t request_id, int64_t customer_id,
                              int64_t amount_minor, const char *currency, invoice_row_t *out);
db_status_t db_invoice_get(db_t *db, uint64_t request_id, int64_t id, invoice_row_t *out);

/* Records an authorisation the gateway answered.  An approved one is checked
 * again against the invoice inside the transaction and marks it paid when
 * it covers the rest; a declined one is recorded as is. */
db_status_t db_payment_record(db_t *db, uint64_t request_id, int64_t invoice_id,
                              int64_t amount_minor, const char *currency, const char *gateway,
                              int decline_code, payment_row_t *out);
db_status_t db_payment_get(db_t *db, uint64_t request_id, int64_t id, payment_row_t *out);

/* Records a refund if, inside the transaction, the payment is approved and
 * its refunds stay within what was captured. */
db_status_t db_refund_record(db_t *db, uint64_t request_id, int64_t payment_id,
                             int64_t amount_minor, const char *reason, refund_row_t *out);

#endif /* BILLINGD_DB_H */
