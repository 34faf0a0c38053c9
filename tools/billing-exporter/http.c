/*
 * http.c -- the exporter's HTTP face.  The socket is ours (so a port in
 * use is one clear line, not libmicrohttpd's log) and handed to
 * libmicrohttpd, which serves it from its own thread.
 *
 * Ready means counting: the socket is bound at start (the port is taken
 * and known) but listens only once every probe is attached, so until then
 * a connection is refused.  Whatever polls /healthz or /metrics (a script,
 * a Kubernetes readiness probe) and then starts the workload loses no
 * fire.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "format.h"
#include "snapshot.h"

struct bx_http {
	struct MHD_Daemon *daemon;
	bx_exporter_t *ex;
	int fd;
	char where[80]; /* "ADDR port N", for messages */
};

static double now_seconds(int clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

char *bx_render(bx_exporter_t *ex, int format, size_t *len)
{
	bx_snapshot_t snap;
	bx_buf_t buf = { 0 };

	pthread_mutex_lock(&ex->lock);
	double t0 = now_seconds(CLOCK_MONOTONIC);
	int rc = bx_snapshot_take(ex, &snap);
	if (rc == 0)
		bx_format(&snap, (bx_format_t)format, now_seconds(CLOCK_REALTIME), &buf);
	bx_snapshot_free(&snap);
	ex->last_scrape_seconds = now_seconds(CLOCK_MONOTONIC) - t0;
	pthread_mutex_unlock(&ex->lock);
	if (rc != 0 || buf.failed) {
		free(buf.data);
		return NULL;
	}
	if (!buf.data)
		bx_buf_printf(&buf, "%s", "");
	*len = buf.len;
	return buf.data;
}

static const char index_page[] =
    "<!doctype html><html><head><title>billing-exporter</title></head><body>"
    "<h1>billing-exporter</h1><p>USDT probes of billing services as Prometheus metrics.</p>"
    "<ul><li><a href=\"/metrics\">/metrics</a></li><li><a href=\"/healthz\">/healthz</a></li></ul>"
    "</body></html>\n";

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
	bx_http_t *h = cls;
	(void)version;
	(void)upload;
	(void)upload_size;
	(void)state;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", (char *)"method not allowed\n",
		             20, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") == 0) {
		const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
		int om = accept && strstr(accept, "application/openmetrics-text") != NULL;
		size_t len = 0;
		char *body = bx_render(h->ex, om ? BX_FMT_OPENMETRICS : BX_FMT_PROMETHEUS, &len);
		if (!body)
			return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", (char *)"out of memory\n",
			             14, MHD_RESPMEM_PERSISTENT);
		return reply(c, MHD_HTTP_OK, om ? BX_CONTENT_TYPE_OPENMETRICS : BX_CONTENT_TYPE_PROMETHEUS,
		             body, len, MHD_RESPMEM_MUST_FREE);
	}
	if (strcmp(url, "/healthz") == 0)
		return reply(c, MHD_HTTP_OK, "text/plain", (char *)"ok\n", 3, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/") == 0)
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", (char *)index_page,
		             sizeof index_page - 1, MHD_RESPMEM_PERSISTENT);
	return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", (char *)"not found\n", 10,
	             MHD_RESPMEM_PERSISTENT);
}

bx_http_t *bx_http_bind(const char *addr, int port, int *bound_port, char *err, size_t errlen)
{
	struct sockaddr_storage sa;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
	socklen_t sl;

	memset(&sa, 0, sizeof sa);
	if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		sl = sizeof *v4;
	} else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		sl = sizeof *v6;
	} else {
		snprintf(err, errlen, "--listen: %s is not an IPv4 or IPv6 address", addr);
		return NULL;
	}
	int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, (struct sockaddr *)&sa, sl) != 0) {
		int e = errno;
		if (e == EADDRINUSE)
			snprintf(err, errlen, "port %d on %s is in use (choose another with --listen ADDR:PORT)", port, addr);
		else
			snprintf(err, errlen, "cannot listen on %s port %d: %s", addr, port, strerror(e));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	*bound_port = ntohs(sa.ss_family == AF_INET6 ? v6->sin6_port : v4->sin_port);
	bx_http_t *h = calloc(1, sizeof *h);
	if (!h) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->fd = fd;
	snprintf(h->where, sizeof h->where, "%s port %d", addr, *bound_port);
	return h;
}

int bx_http_serve(bx_http_t *h, bx_exporter_t *ex, char *err, size_t errlen)
{
	h->ex = ex;
	if (listen(h->fd, 64) != 0) {
		/* another process bound the port with SO_REUSEADDR too, and listened first */
		if (errno == EADDRINUSE)
			snprintf(err, errlen, "%s is in use (choose another with --listen ADDR:PORT)", h->where);
		else
			snprintf(err, errlen, "cannot listen on %s: %s", h->where, strerror(errno));
		return -1;
	}
	h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle, h,
	                             MHD_OPTION_LISTEN_SOCKET, h->fd,
	                             MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
	                             MHD_OPTION_END);
	if (!h->daemon) {
		snprintf(err, errlen, "cannot start the HTTP server on %s", h->where);
		return -1;
	}
	return 0;
}

void bx_http_stop(bx_http_t *h)
{
	if (!h)
		return;
	if (h->daemon)
		MHD_stop_daemon(h->daemon); /* closes the socket it was given */
	else
		close(h->fd);
	free(h);
}
