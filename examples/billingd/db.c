/*
 * db.c -- SQLite connections: the schema, one connection per worker thread,
 * and a clean close at shutdown.
 */
#include "db_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/timing.h"

/* A writer waits this long for the lock before SQLite gives up with BUSY. */
#define DB_BUSY_TIMEOUT_MS 2000

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS invoices ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  customer_id INTEGER NOT NULL CHECK (customer_id > 0),"
    "  amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),"
    "  currency TEXT NOT NULL CHECK (length(currency) = 3),"
    "  paid_minor INTEGER NOT NULL DEFAULT 0 CHECK (paid_minor BETWEEN 0 AND amount_minor),"
    "  status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'paid')),"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS payments ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  invoice_id INTEGER NOT NULL REFERENCES invoices(id),"
    "  amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),"
    "  currency TEXT NOT NULL,"
    "  gateway TEXT NOT NULL,"
    "  status TEXT NOT NULL CHECK (status IN ('approved', 'declined')),"
    "  decline_code INTEGER NOT NULL DEFAULT 0,"
    "  refunded_minor INTEGER NOT NULL DEFAULT 0"
    "    CHECK (refunded_minor BETWEEN 0 AND amount_minor),"
    "  created_at INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS payments_by_invoice ON payments(invoice_id);"
    "CREATE TABLE IF NOT EXISTS refunds ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  payment_id INTEGER NOT NULL REFERENCES payments(id),"
    "  amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),"
    "  reason TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS refunds_by_payment ON refunds(payment_id);";

static const char *const statement_sql[ST_COUNT] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_INVOICE_INSERT] = "INSERT INTO invoices (customer_id, amount_minor, currency, created_at)"
	                      " VALUES (?1, ?2, ?3, ?4)",
	[ST_INVOICE_SELECT] = "SELECT id, customer_id, amount_minor, paid_minor, currency, status"
	                      " FROM invoices WHERE id = ?1",
	[ST_INVOICE_ADD_PAID] = "UPDATE invoices SET paid_minor = paid_minor + ?2,"
	                        " status = CASE WHEN paid_minor + ?2 >= amount_minor"
	                        " THEN 'paid' ELSE 'open' END WHERE id = ?1",
	[ST_PAYMENT_INSERT] = "INSERT INTO payments (invoice_id, amount_minor, currency, gateway,"
	                      " status, decline_code, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_PAYMENT_SELECT] = "SELECT id, invoice_id, amount_minor, refunded_minor, currency,"
	                      " gateway, decline_code FROM payments WHERE id = ?1",
	[ST_PAYMENT_ADD_REFUNDED] = "UPDATE payments SET refunded_minor = refunded_minor + ?2"
	                            " WHERE id = ?1",
	[ST_REFUND_INSERT] = "INSERT INTO refunds (payment_id, amount_minor, reason, created_at)"
	                     " VALUES (?1, ?2, ?3, ?4)",
};

static char *db_path;
static sqlite3 *main_conn;

/* Every worker connection, so shutdown can close them: the lock is taken
 * once per thread, at open, never per request. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static db_t **registry;
static size_t registry_len, registry_cap;

static _Thread_local db_t *thread_db;

static int open_connection(const char *path, sqlite3 **out, char *errbuf, size_t errlen)
{
	sqlite3 *conn = NULL;
	int rc = sqlite3_open_v2(path, &conn,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	                         NULL);
	if (rc != SQLITE_OK) {
		snprintf(errbuf, errlen, "cannot open database %s: %s", path,
		         conn ? sqlite3_errmsg(conn) : sqlite3_errstr(rc));
		sqlite3_close(conn);
		return -1;
	}
	sqlite3_busy_timeout(conn, DB_BUSY_TIMEOUT_MS);
	/* WAL + synchronous=NORMAL: a commit is durable against a crash of the
	 * process, and the WAL is fsync'ed at checkpoints. */
	rc = sqlite3_exec(conn, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
	                  NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		snprintf(errbuf, errlen, "cannot configure database %s: %s", path,
		         sqlite3_errmsg(conn));
		sqlite3_close(conn);
		return -1;
	}
	*out = conn;
	return 0;
}

int db_init(const char *path, char *errbuf, size_t errlen)
{
	char *mode = NULL;
	sqlite3_stmt *st = NULL;

	if (sqlite3_threadsafe() == 0) {
		snprintf(errbuf, errlen, "this SQLite was built without thread support");
		return -1;
	}
	db_path = strdup(path);
	if (db_path == NULL || open_connection(path, &main_conn, errbuf, errlen) != 0)
		return -1;
	if (sqlite3_prepare_v2(main_conn, "PRAGMA journal_mode = WAL", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		mode = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	if (mode == NULL || strcmp(mode, "wal") != 0) {
		snprintf(errbuf, errlen, "cannot put database %s in WAL mode (%s)", path,
		         mode ? mode : sqlite3_errmsg(main_conn));
		free(mode);
		return -1;
	}
	free(mode);
	if (sqlite3_exec(main_conn, schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(errbuf, errlen, "cannot create the schema in %s: %s", path,
		         sqlite3_errmsg(main_conn));
		return -1;
	}
	return 0;
}

static void close_db(db_t *db)
{
	int i;
	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(db->st[i]);
	sqlite3_close(db->conn);
	free(db);
}

static db_t *open_db(void)
{
	char err[256];
	db_t *db = calloc(1, sizeof(*db));
	int i;
	if (db == NULL)
		return NULL;
	if (open_connection(db_path, &db->conn, err, sizeof(err)) != 0) {
		fprintf(stderr, "billingd: %s\n", err);
		free(db);
		return NULL;
	}
	for (i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(db->conn, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
		                       &db->st[i], NULL) != SQLITE_OK) {
			fprintf(stderr, "billingd: cannot prepare statement %d: %s\n", i,
			        sqlite3_errmsg(db->conn));
			close_db(db);
			return NULL;
		}
	}
	return db;
}

db_t *db_for_thread(void)
{
	db_t *db;
	if (thread_db != NULL)
		return thread_db;
	db = open_db();
	if (db == NULL)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	if (registry_len == registry_cap) {
		size_t cap = registry_cap ? registry_cap * 2 : 16;
		db_t **grown = realloc(registry, cap * sizeof(*grown));
		if (grown == NULL) {
			pthread_mutex_unlock(&registry_lock);
			close_db(db);
			return NULL;
		}
		registry = grown;
		registry_cap = cap;
	}
	registry[registry_len++] = db;
	pthread_mutex_unlock(&registry_lock);
	thread_db = db;
	return db;
}

int db_shutdown(void)
{
	size_t i;
	int rc = 0;
	pthread_mutex_lock(&registry_lock);
	for (i = 0; i < registry_len; i++)
		close_db(registry[i]);
	free(registry);
	registry = NULL;
	registry_len = registry_cap = 0;
	pthread_mutex_unlock(&registry_lock);
	if (main_conn != NULL) {
		/* Fold the WAL into the database file so it is complete on its own. */
		if (sqlite3_wal_checkpoint_v2(main_conn, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) !=
		    SQLITE_OK) {
			fprintf(stderr, "billingd: final checkpoint failed: %s\n",
			        sqlite3_errmsg(main_conn));
			rc = -1;
		}
		if (sqlite3_close(main_conn) != SQLITE_OK)
			rc = -1;
		main_conn = NULL;
	}
	free(db_path);
	db_path = NULL;
	return rc;
}

int db_step(db_t *db, uint64_t request_id, enum db_statement which, const char *operation)
{
	billing_db_query_t q;
	int rc;
	billing_db_query_begin(&q, request_id, operation);
	rc = sqlite3_step(db->st[which]);
	billing_db_query_end(&q, rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : rc);
	return rc;
}
