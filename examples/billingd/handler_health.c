/*
 * handler_health.c -- GET /healthz: the process serves requests.
 */
#include "handlers.h"
#include "reply.h"

reply_t handle_health(const request_t *rq)
{
	(void)rq;
	return reply_json(200, json_pack("{s:s}", "status", "ok"));
}
