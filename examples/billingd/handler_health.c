/*
 * handler_health.c -- GET /healthz: the process serves requests.
 */
#include "handlers.h"
#include "reply.h"

reply_t handle_health(const request_t *rq, const char *path_arg, const char *body,
                      size_t body_len)
{
	(void)rq;
	(void)path_arg;
	(void)body;
	(void)body_len;
	return reply_json(200, json_pack("{s:s}", "status", "ok"));
}
