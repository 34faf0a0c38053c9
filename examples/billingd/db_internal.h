/*
 * db_internal.h -- what db.c (connections) shares with db_ops.c (queries).
 */
#ifndef BILLINGD_DB_INTERNAL_H
#define BILLINGD_DB_INTERNAL_H

#include <sqlite3.h>

#include "db.h"

enum db_statement {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_INVOICE_INSERT,
	ST_INVOICE_SELECT,
	ST_INVOICE_ADD_PAID,
	ST_PAYMENT_INSERT,
	ST_PAYMENT_SELECT,
	ST_PAYMENT_ADD_REFUNDED,
	ST_REFUND_INSERT,
	ST_COUNT
};

struct db {
	sqlite3 *conn;
	sqlite3_stmt *st[ST_COUNT];
};

/* Steps st once, inside the db-query pair named operation; returns the
 * sqlite3_step() code.  The caller resets the statement. */
int db_step(db_t *db, uint64_t request_id, enum db_statement which, const char *operation);

#endif /* BILLINGD_DB_INTERNAL_H */
