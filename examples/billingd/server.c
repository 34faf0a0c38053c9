/*
 * server.c -- libmicrohttpd glue and routing.
 *
 * libmicrohttpd calls on_request several times per request: once when the
 * headers are in (we route it and fire request-start), once per piece of
 * body (we keep up to BILLINGD_MAX_BODY bytes), and once at the end (we run
 * the handler and queue the reply, firing request-done).  on_completed
 * runs when the reply has gone out or the connection died.
 */
#include "server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "billing/timing.h"
#include "handlers.h"
#include "reply.h"
#include "request_deadline.h"

/* Descriptors billingd needs besides its connections: the listening and
 * epoll sockets, the threads' wake-up pipes, SQLite's files, stdio. */
#define FD_RESERVE 64
/* Bytes a connection may hold (headers, read and write buffers); bodies are
 * copied out piece by piece.  libmicrohttpd's 32 KiB default made 2,000
 * idle connections cost 75 MB of RSS. */
#define CONNECTION_MEMORY 16384
/* Seconds a client that stopped reading its reply keeps its connection. */
#define IDLE_TIMEOUT_S 10
/* request-done's status for a request not carried out because the request
 * deadline shut its connection down as it came in (nginx's "444: closed
 * without a response"); no reply is sent with it. */
#define STATUS_UNHEARD 444

typedef struct route {
	const char *path; /* exact, or a prefix when it ends in '/' */
	const char *method;
	const char *handler; /* the handler name the probes carry */
	handler_fn fn;
} route_t;

static const route_t routes[] = {
	{ "/invoices", "POST", "invoice.create", handle_invoice_create },
	{ "/invoices/", "GET", "invoice.get", handle_invoice_get },
	{ "/payments/authorize", "POST", "payment.authorize", handle_payment_authorize },
	{ "/refunds", "POST", "refund.create", handle_refund_create },
	{ "/healthz", "GET", "health", handle_health },
};

/* One request on a connection. */
typedef struct exchange {
	request_t rq;
	const route_t *route; /* NULL: answered 404 or 405 */
	const char *allow;    /* for a 405: the method the path takes */
	char *body;
	size_t body_len, body_cap;
	int too_large;
	int answered;
} exchange_t;

static struct MHD_Daemon *daemon_handle;
static atomic_uint in_flight;
static atomic_int draining;
static atomic_uint_fast64_t answered_count;

static void find_route(exchange_t *ex, const char *url, const char *method)
{
	size_t i;
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const route_t *r = &routes[i];
		size_t n = strlen(r->path);
		int prefix = r->path[n - 1] == '/';
		if (prefix ? strncmp(url, r->path, n) != 0 : strcmp(url, r->path) != 0)
			continue;
		if (strcmp(method, r->method) != 0) {
			ex->allow = r->method;
			continue;
		}
		ex->route = r;
		ex->rq.path_arg = prefix ? url + n : ""; /* into the URL libmicrohttpd keeps */
		return;
	}
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, exchange_t *ex, reply_t reply)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	ex->answered = 1;
	(void)request_deadline_answering(conn);
	billing_request_end(&ex->rq.span, reply.status / 100 == 2 ? 0 : (int32_t)reply.status);
	if (reply.body == NULL)
		return MHD_NO; /* out of memory: drop the connection */
	resp = MHD_create_response_from_buffer(strlen(reply.body), reply.body,
	                                       MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(reply.body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (reply.allow != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, reply.allow);
	if (atomic_load(&draining))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, reply.status, resp);
	MHD_destroy_response(resp);
	atomic_fetch_add_explicit(&answered_count, 1, memory_order_relaxed);
	return ret;
}

static reply_t too_large(const request_t *rq)
{
	return reply_error(rq, 413, "http", "body_too_large",
	                   "the request body is larger than 16 KiB");
}

static reply_t unrouted(const exchange_t *ex)
{
	reply_t r;
	if (ex->allow == NULL)
		return reply_error(&ex->rq, 404, "http", "not_found", "no such resource");
	r = reply_error(&ex->rq, 405, "http", "method_not_allowed",
	                "this resource does not take that method");
	r.allow = ex->allow;
	return r;
}

static void keep_body(exchange_t *ex, const char *data, size_t len)
{
	if (ex->too_large)
		return;
	if (ex->body_len + len > BILLINGD_MAX_BODY) {
		ex->too_large = 1;
		return;
	}
	if (ex->body_len + len + 1 > ex->body_cap) {
		size_t cap = ex->body_len + len + 1 < 1024 ? 1024 : BILLINGD_MAX_BODY + 1;
		char *grown = realloc(ex->body, cap);
		if (grown == NULL) {
			ex->too_large = 1; /* cannot keep it: refuse it */
			return;
		}
		ex->body = grown;
		ex->body_cap = cap;
	}
	memcpy(ex->body + ex->body_len, data, len);
	ex->body_len += len;
	ex->body[ex->body_len] = '\0';
}

static int declared_too_large(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	                                             MHD_HTTP_HEADER_CONTENT_LENGTH);
	return cl != NULL && strtoull(cl, NULL, 10) > BILLINGD_MAX_BODY;
}

/* The request deadline shut the connection down while this request came
 * in: its client hears nothing (and may send it again on a fresh
 * connection), so it is not carried out.  Its span ends with status
 * STATUS_UNHEARD. */
static enum MHD_Result drop_unheard(exchange_t *ex)
{
	ex->answered = 1;
	billing_request_end(&ex->rq.span, STATUS_UNHEARD);
	return MHD_NO;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **state)
{
	exchange_t *ex = *state;
	(void)cls;
	(void)version;

	if (ex == NULL) {
		/* Headers are in: a new request. */
		ex = calloc(1, sizeof(*ex));
		if (ex == NULL)
			return MHD_NO;
		atomic_fetch_add(&in_flight, 1);
		*state = ex;
		find_route(ex, url, method);
		ex->rq.id = next_request_id();
		ex->rq.handler = ex->route   ? ex->route->handler
		                 : ex->allow ? "method_not_allowed"
		                             : "not_found";
		billing_request_begin(&ex->rq.span, ex->rq.id, ex->rq.handler);
		if (declared_too_large(conn))
			return send_reply(conn, ex, too_large(&ex->rq)); /* do not read it */
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		if (!ex->answered && ex->route != NULL)
			keep_body(ex, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (ex->answered)
		return MHD_YES;
	if (request_deadline_answering(conn) != 0)
		return drop_unheard(ex);
	if (ex->too_large)
		return send_reply(conn, ex, too_large(&ex->rq));
	if (ex->route == NULL)
		return send_reply(conn, ex, unrouted(ex));
	ex->rq.body = ex->body ? ex->body : "";
	ex->rq.body_len = ex->body_len;
	return send_reply(conn, ex, ex->route->fn(&ex->rq));
}

/* While draining, a new connection is closed as soon as it is accepted:
 * only the requests already in flight are finished.  (Not
 * MHD_quiesce_daemon(): on an epoll daemon with a thread pool it removes
 * the listening socket from each worker's epoll set while the worker may
 * be removing it too, and libmicrohttpd 0.9.75 aborts the process with
 * "Failed to remove listen FD from epoll set" when it loses that race.) */
static enum MHD_Result accept_unless_draining(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)cls;
	(void)addr;
	(void)addrlen;
	return atomic_load(&draining) ? MHD_NO : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **state,
                         enum MHD_RequestTerminationCode why)
{
	exchange_t *ex = *state;
	(void)cls;
	(void)why;
	request_deadline_waiting(conn);
	if (ex == NULL)
		return;
	*state = NULL;
	if (!ex->answered) /* the client went away mid-request: close the span */
		billing_request_end(&ex->rq.span, 499);
	free(ex->body);
	free(ex);
	atomic_fetch_sub(&in_flight, 1);
}

/* Raises the soft descriptor limit to fit max_connections.  An explicit
 * --max-connections that cannot fit is an error; the default shrinks. */
static int fit_descriptors(const billingd_options_t *opts, unsigned int *max_connections)
{
	struct rlimit lim;
	rlim_t need = (rlim_t)opts->max_connections + FD_RESERVE;

	*max_connections = opts->max_connections;
	if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= need)
		return 0;
	lim.rlim_cur = lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need ? lim.rlim_max : need;
	setrlimit(RLIMIT_NOFILE, &lim);
	getrlimit(RLIMIT_NOFILE, &lim);
	if (lim.rlim_cur >= need)
		return 0;
	if (opts->max_connections_given || lim.rlim_cur <= FD_RESERVE + 16) {
		fprintf(stderr, "billingd: --max-connections %u needs %llu open files; the limit is "
		                "%llu (ulimit -n)\n",
		        opts->max_connections, (unsigned long long)need,
		        (unsigned long long)lim.rlim_cur);
		return -1;
	}
	*max_connections = (unsigned int)(lim.rlim_cur - FD_RESERVE);
	return 0;
}

unsigned int server_start(const billingd_options_t *opts)
{
	struct sockaddr_in addr;
	const union MHD_DaemonInfo *info;
	unsigned int max_connections;

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)opts->port);
	if (inet_pton(AF_INET, opts->listen_address, &addr.sin_addr) != 1) {
		fprintf(stderr, "billingd: --listen wants an IPv4 address, got '%s'\n",
		        opts->listen_address);
		return 0;
	}
	if (fit_descriptors(opts, &max_connections) != 0)
		return 0;
	if (request_deadline_start(opts->request_timeout, max_connections) != 0) {
		fprintf(stderr, "billingd: cannot start the request-deadline thread\n");
		return 0;
	}
	daemon_handle = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC | MHD_USE_ERROR_LOG,
	    (uint16_t)opts->port, accept_unless_draining, NULL, on_request, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)opts->threads,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_NOTIFY_CONNECTION, request_deadline_notify, NULL,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_LIMIT, max_connections,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
	    MHD_OPTION_END);
	if (daemon_handle == NULL) {
		fprintf(stderr, "billingd: cannot listen on %s:%u (in use, or not allowed)\n",
		        opts->listen_address, opts->port);
		request_deadline_stop();
		return 0;
	}
	info = MHD_get_daemon_info(daemon_handle, MHD_DAEMON_INFO_BIND_PORT);
	return info ? info->port : opts->port;
}

void server_refuse_new(void)
{
	atomic_store(&draining, 1);
}

unsigned int server_drain(unsigned int timeout_ms)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	unsigned int waited = 0;
	while (atomic_load(&in_flight) > 0 && waited < timeout_ms) {
		nanosleep(&tick, NULL);
		waited += 10;
	}
	return atomic_load(&in_flight);
}

void server_stop(void)
{
	if (daemon_handle != NULL)
		MHD_stop_daemon(daemon_handle);
	daemon_handle = NULL;
	request_deadline_stop();
}

uint64_t server_requests_answered(void)
{
	return (uint64_t)atomic_load(&answered_count);
}
