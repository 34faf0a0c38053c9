/*
 * db_ops.c -- the queries and transactions of billingd.
 */
#include "db_internal.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

/* Attempts of one transaction while the database stays locked; each waits
 * busy_timeout first, so this is seconds of contention, not a spin. */
#define DB_ATTEMPTS 3

/* SQLite lets one writer in at a time and makes the others poll, sleeping
 * 1, 2, 5, 10... ms between tries.  Queueing our own writers on a mutex
 * instead wakes the next one as soon as the lock is free; busy_timeout
 * still covers writers in other processes. */
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;

static int is_busy(int rc)
{
	rc &= 0xff;
	return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

static db_status_t failure(int rc)
{
	return is_busy(rc) ? DB_BUSY : DB_ERROR;
}

static void copy_text(char *dst, size_t size, const unsigned char *src)
{
	size_t n = src ? strlen((const char *)src) : 0;
	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Runs a statement that returns no row and resets it. */
static int exec_done(db_t *db, uint64_t request_id, enum db_statement which, const char *op)
{
	int rc = db_step(db, request_id, which, op);
	sqlite3_reset(db->st[which]);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

typedef db_status_t (*tx_body_fn)(db_t *db, uint64_t request_id, void *arg);

/* BEGIN IMMEDIATE, body, COMMIT; rolled back and retried while locked. */
static db_status_t in_transaction(db_t *db, uint64_t request_id, tx_body_fn body, void *arg)
{
	int attempt, rc;
	for (attempt = 0; attempt < DB_ATTEMPTS; attempt++) {
		db_status_t st;
		pthread_mutex_lock(&writer_lock);
		rc = exec_done(db, request_id, ST_BEGIN, "tx.begin");
		if (rc != SQLITE_OK) {
			pthread_mutex_unlock(&writer_lock);
			if (is_busy(rc))
				continue;
			return DB_ERROR;
		}
		st = body(db, request_id, arg);
		if (st == DB_OK) {
			rc = exec_done(db, request_id, ST_COMMIT, "tx.commit");
			if (rc == SQLITE_OK) {
				pthread_mutex_unlock(&writer_lock);
				return DB_OK;
			}
			st = failure(rc);
		}
		if (sqlite3_get_autocommit(db->conn) == 0)
			exec_done(db, request_id, ST_ROLLBACK, "tx.rollback");
		pthread_mutex_unlock(&writer_lock);
		if (st != DB_BUSY)
			return st;
	}
	return DB_BUSY;
}

db_status_t db_invoice_insert(db_t *db, uint64_t request_id, int64_t customer_id,
                              int64_t amount_minor, const char *currency, invoice_row_t *out)
{
	sqlite3_stmt *st = db->st[ST_INVOICE_INSERT];
	int attempt, rc = SQLITE_BUSY;
	sqlite3_bind_int64(st, 1, customer_id);
	sqlite3_bind_int64(st, 2, amount_minor);
	sqlite3_bind_text(st, 3, currency, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
	/* One INSERT is its own transaction: retry it alone while locked. */
	for (attempt = 0; attempt < DB_ATTEMPTS; attempt++) {
		pthread_mutex_lock(&writer_lock);
		rc = exec_done(db, request_id, ST_INVOICE_INSERT, "invoice.insert");
		pthread_mutex_unlock(&writer_lock);
		if (!is_busy(rc))
			break;
	}
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_OK)
		return failure(rc);
	out->id = sqlite3_last_insert_rowid(db->conn);
	out->customer_id = customer_id;
	out->amount_minor = amount_minor;
	out->paid_minor = 0;
	copy_text(out->currency, sizeof(out->currency), (const unsigned char *)currency);
	copy_text(out->status, sizeof(out->status), (const unsigned char *)"open");
	return DB_OK;
}

typedef void (*row_reader_fn)(sqlite3_stmt *st, void *out);

/* Runs a SELECT of one row by id: OUT is filled by READ when it is found. */
static db_status_t select_by_id(db_t *db, uint64_t request_id, enum db_statement which,
                                const char *op, int64_t id, row_reader_fn read, void *out)
{
	sqlite3_stmt *st = db->st[which];
	db_status_t result;
	int rc;
	sqlite3_bind_int64(st, 1, id);
	rc = db_step(db, request_id, which, op);
	if (rc == SQLITE_ROW) {
		read(st, out);
		result = DB_OK;
	} else {
		result = rc == SQLITE_DONE ? DB_NOT_FOUND : failure(rc);
	}
	sqlite3_reset(st);
	return result;
}

static void read_invoice(sqlite3_stmt *st, void *row)
{
	invoice_row_t *out = row;
	out->id = sqlite3_column_int64(st, 0);
	out->customer_id = sqlite3_column_int64(st, 1);
	out->amount_minor = sqlite3_column_int64(st, 2);
	out->paid_minor = sqlite3_column_int64(st, 3);
	copy_text(out->currency, sizeof(out->currency), sqlite3_column_text(st, 4));
	copy_text(out->status, sizeof(out->status), sqlite3_column_text(st, 5));
}

static void read_payment(sqlite3_stmt *st, void *row)
{
	payment_row_t *out = row;
	out->id = sqlite3_column_int64(st, 0);
	out->invoice_id = sqlite3_column_int64(st, 1);
	out->amount_minor = sqlite3_column_int64(st, 2);
	out->refunded_minor = sqlite3_column_int64(st, 3);
	copy_text(out->currency, sizeof(out->currency), sqlite3_column_text(st, 4));
	copy_text(out->gateway, sizeof(out->gateway), sqlite3_column_text(st, 5));
	out->decline_code = sqlite3_column_int(st, 6);
}

db_status_t db_invoice_get(db_t *db, uint64_t request_id, int64_t id, invoice_row_t *out)
{
	return select_by_id(db, request_id, ST_INVOICE_SELECT, "invoice.select", id, read_invoice,
	                    out);
}

db_status_t db_payment_get(db_t *db, uint64_t request_id, int64_t id, payment_row_t *out)
{
	return select_by_id(db, request_id, ST_PAYMENT_SELECT, "payment.select", id, read_payment,
	                    out);
}

/* Runs a statement whose values are bound, then unbinds them. */
static db_status_t run_bound(db_t *db, uint64_t request_id, enum db_statement which,
                             const char *op)
{
	int rc = exec_done(db, request_id, which, op);
	sqlite3_clear_bindings(db->st[which]);
	return rc == SQLITE_OK ? DB_OK : failure(rc);
}

/* Adds AMOUNT to a running total of the row ID (paid, refunded). */
static db_status_t add_amount(db_t *db, uint64_t request_id, enum db_statement which,
                              const char *op, int64_t id, int64_t amount)
{
	sqlite3_bind_int64(db->st[which], 1, id);
	sqlite3_bind_int64(db->st[which], 2, amount);
	return run_bound(db, request_id, which, op);
}

db_status_t db_invoice_can_take(const invoice_row_t *inv, int64_t amount_minor)
{
	if (inv->paid_minor >= inv->amount_minor)
		return DB_INVOICE_PAID;
	if (amount_minor > inv->amount_minor - inv->paid_minor)
		return DB_EXCEEDS_BALANCE;
	return DB_OK;
}

db_status_t db_payment_can_refund(const payment_row_t *pay, int64_t amount_minor)
{
	if (pay->decline_code != 0)
		return DB_NOT_CAPTURED;
	if (amount_minor > pay->amount_minor - pay->refunded_minor)
		return DB_EXCEEDS_CAPTURED;
	return DB_OK;
}

struct payment_args {
	int64_t invoice_id;
	int64_t amount_minor;
	const char *currency;
	const char *gateway;
	int decline_code;
	payment_row_t *out;
};

static db_status_t payment_body(db_t *db, uint64_t request_id, void *arg)
{
	struct payment_args *a = arg;
	invoice_row_t inv;
	sqlite3_stmt *st;
	db_status_t s;

	/* Check the invoice again under the write lock: another payment may
	 * have paid it since the handler looked. */
	s = db_invoice_get(db, request_id, a->invoice_id, &inv);
	if (s == DB_OK && a->decline_code == 0)
		s = db_invoice_can_take(&inv, a->amount_minor);
	if (s != DB_OK)
		return s;

	st = db->st[ST_PAYMENT_INSERT];
	sqlite3_bind_int64(st, 1, a->invoice_id);
	sqlite3_bind_int64(st, 2, a->amount_minor);
	sqlite3_bind_text(st, 3, a->currency, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, a->gateway, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, a->decline_code == 0 ? "approved" : "declined", -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 6, a->decline_code);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
	s = run_bound(db, request_id, ST_PAYMENT_INSERT, "payment.insert");
	if (s != DB_OK)
		return s;
	a->out->id = sqlite3_last_insert_rowid(db->conn);

	if (a->decline_code == 0) {
		return add_amount(db, request_id, ST_INVOICE_ADD_PAID, "invoice.add_paid", a->invoice_id,
		                  a->amount_minor);
	}
	return DB_OK;
}

db_status_t db_payment_record(db_t *db, uint64_t request_id, int64_t invoice_id,
                              int64_t amount_minor, const char *currency, const char *gateway,
                              int decline_code, payment_row_t *out)
{
	struct payment_args a = { invoice_id, amount_minor, currency, gateway, decline_code, out };
	db_status_t s = in_transaction(db, request_id, payment_body, &a);
	if (s == DB_OK) {
		out->invoice_id = invoice_id;
		out->amount_minor = amount_minor;
		out->refunded_minor = 0;
		copy_text(out->currency, sizeof(out->currency), (const unsigned char *)currency);
		copy_text(out->gateway, sizeof(out->gateway), (const unsigned char *)gateway);
		out->decline_code = decline_code;
	}
	return s;
}

struct refund_args {
	int64_t payment_id;
	int64_t amount_minor;
	const char *reason;
	refund_row_t *out;
};

static db_status_t refund_body(db_t *db, uint64_t request_id, void *arg)
{
	struct refund_args *a = arg;
	payment_row_t pay;
	sqlite3_stmt *st;
	db_status_t s;

	s = db_payment_get(db, request_id, a->payment_id, &pay);
	if (s == DB_OK)
		s = db_payment_can_refund(&pay, a->amount_minor);
	if (s != DB_OK)
		return s;

	st = db->st[ST_REFUND_INSERT];
	sqlite3_bind_int64(st, 1, a->payment_id);
	sqlite3_bind_int64(st, 2, a->amount_minor);
	sqlite3_bind_text(st, 3, a->reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
	s = run_bound(db, request_id, ST_REFUND_INSERT, "refund.insert");
	if (s != DB_OK)
		return s;
	a->out->id = sqlite3_last_insert_rowid(db->conn);

	s = add_amount(db, request_id, ST_PAYMENT_ADD_REFUNDED, "payment.add_refunded", a->payment_id,
	               a->amount_minor);
	if (s != DB_OK)
		return s;
	a->out->payment_id = a->payment_id;
	a->out->amount_minor = a->amount_minor;
	a->out->refunded_total_minor = pay.refunded_minor + a->amount_minor;
	memcpy(a->out->currency, pay.currency, sizeof(pay.currency));
	return DB_OK;
}

db_status_t db_refund_record(db_t *db, uint64_t request_id, int64_t payment_id,
                             int64_t amount_minor, const char *reason, refund_row_t *out)
{
	struct refund_args a = { payment_id, amount_minor, reason, out };
	return in_transaction(db, request_id, refund_body, &a);
}
