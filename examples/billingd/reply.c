/*
 * reply.c -- JSON replies.
 */
#include "reply.h"

#include <stdlib.h>
#include <string.h>

#include "billing/probes.h"

static char *dump_or_fallback(json_t *obj)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	json_decref(obj);
	if (text == NULL) {
		/* Out of memory while serialising: still answer something valid. */
		static const char fallback[] = "{\"error\":{\"code\":\"internal_error\"}}";
		text = malloc(sizeof(fallback));
		if (text)
			memcpy(text, fallback, sizeof(fallback));
	}
	return text;
}

reply_t reply_json(unsigned int status, json_t *obj)
{
	reply_t r;
	r.status = status;
	r.body = dump_or_fallback(obj);
	r.allow = NULL;
	return r;
}

reply_t reply_error(const request_t *rq, unsigned int status, const char *component,
                    const char *code, const char *message)
{
	BILLING_ERROR(rq->id, component, (int)status);
	return reply_json(status, json_pack("{s:{s:s,s:s}}", "error", "code", code,
	                                    "message", message));
}

reply_t reply_db_failed(const request_t *rq)
{
	return reply_error(rq, 500, "db", "internal_error", "the database failed");
}

db_t *db_for_request(const request_t *rq, reply_t *err)
{
	db_t *db = db_for_thread();
	if (db == NULL)
		*err = reply_db_failed(rq);
	return db;
}

reply_t reply_db_refusal(const request_t *rq, db_status_t s, const refusal_t *refusals,
                         size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (refusals[i].status == s)
			return reply_error(rq, refusals[i].http_status, refusals[i].component,
			                   refusals[i].code, refusals[i].message);
	if (s == DB_BUSY)
		return reply_error(rq, 503, "db", "database_busy",
		                   "the database stayed locked; retry the request");
	return reply_db_failed(rq);
}
