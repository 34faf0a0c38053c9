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
 *
 * Fit to leave the host: TLS and basic auth from --web-config
 * (web_config.c), an epoll loop per thread so thousands of idle clients
 * cost descriptors rather than a select() set, a cap on clients overall
 * and per peer (conn_limits.c), and a deadline on each request that a client sending
 * one byte at a time cannot push back (libmicrohttpd's own timeout counts
 * from the last byte received): a reaper thread shuts such a connection's
 * socket down, and libmicrohttpd closes it.
 */
#include "http.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "peer.h"
#include "format.h"
#include "exporter.h"
#include "ticker.h"

#define SERVER_THREADS 4 /* a bcrypt check or a snapshot in one leaves the others answering */

/* A client connection, for the request deadline. */
typedef struct conn {
	struct conn *prev, *next;
	int fd;
	int cut;      /* its socket was shut down */
	int admitted; /* counted in the limits until closed */
	bx_peer_t peer;
	double since; /* accepted, or its last response sent */
} conn_t;

struct bx_http {
	struct MHD_Daemon *daemon;
	bx_exporter_t *ex;
	bx_web_config_t *web;
	int fd;
	char where[80]; /* "ADDR port N", for messages */
	unsigned request_seconds;
	pthread_mutex_t lock; /* conns */
	conn_t *conns;
	bx_conn_limits_t *limits;
	pthread_t reaper;
	int reaper_running;
	bx_ticker_t reaper_ticks;
};

char *bx_render(bx_exporter_t *ex, int format, size_t *len)
{
	bx_snapshot_t snap;
	pr_buf_t buf = { 0 };

	pthread_mutex_lock(&ex->lock);
	double t0 = bx_seconds(CLOCK_MONOTONIC);
	int rc = bx_snapshot_take(ex, &snap, format == BX_FMT_PROTOBUF); /* native buckets only there */
	if (rc == 0 && format == BX_FMT_OPENMETRICS)
		bx_format_openmetrics(&snap, ex->exemplars, &buf);
	else if (rc == 0 && format == BX_FMT_PROTOBUF)
		bx_format_protobuf(&snap, ex->exemplars, &buf);
	else if (rc == 0)
		bx_format(&snap, (bx_format_t)format, bx_seconds(CLOCK_REALTIME), &buf);
	bx_snapshot_free(&snap);
	ex->last_scrape_seconds = bx_seconds(CLOCK_MONOTONIC) - t0;
	pthread_mutex_unlock(&ex->lock);
	if (rc != 0 || buf.failed) {
		free(buf.data);
		return NULL;
	}
	if (!buf.data)
		pr_buf_printf(&buf, "%s", "");
	*len = buf.len;
	return buf.data;
}

/* An Accept header longer than this is not read (the exposition is then
 * text): Prometheus 3's, the longest a scraper sends, is about 300 bytes,
 * and what a request may cost in parsing stays bounded. */
#define BX_ACCEPT_MAX_BYTES 4096

typedef struct span {
	const char *s;
	size_t n;
} span_t;

/* [s, s+n) without the spaces and tabs around it. */
static span_t trimmed(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return (span_t){ s, n };
}

static int span_is(span_t a, const char *lit, int fold_case)
{
	size_t n = strlen(lit);
	return a.n == n && (fold_case ? strncasecmp(a.s, lit, n) == 0 : memcmp(a.s, lit, n) == 0);
}

/* RFC 9110's qvalue: "0" ["." up to 3 digits] or "1" ["." up to 3 zeros];
 * anything else refuses the entry (0). */
static double qvalue(span_t v)
{
	if (v.n == 0 || (v.s[0] != '0' && v.s[0] != '1') || (v.n > 1 && (v.s[1] != '.' || v.n > 5)))
		return 0;
	double q = v.s[0] - '0', place = 0.1;
	for (size_t i = 2; i < v.n; i++, place /= 10) {
		if (v.s[i] < '0' || v.s[i] > '9')
			return 0;
		q += (v.s[i] - '0') * place;
	}
	return q > 1 ? 0 : q;
}

/* One pass over the Accept header: the q of its first protobuf entry that
 * asks for delimited MetricFamily messages (*pb) and of its first
 * OpenMetrics entry (*om), 1 when an entry gives no q, -1 when none is
 * listed.  Each byte is looked at a bounded number of times. */
static void accept_q(const char *accept, double *pb, double *om)
{
	*pb = *om = -1;
	size_t len = accept ? strnlen(accept, BX_ACCEPT_MAX_BYTES + 1) : 0;
	if (len > BX_ACCEPT_MAX_BYTES)
		return;
	for (const char *p = accept, *end = accept + len; p && p < end;) {
		const char *e = memchr(p, ',', (size_t)(end - p));
		e = e ? e : end;
		const char *semi = memchr(p, ';', (size_t)(e - p));
		semi = semi ? semi : e;
		span_t type = trimmed(p, (size_t)(semi - p));
		int is_pb = span_is(type, "application/vnd.google.protobuf", 1);
		int is_om = span_is(type, "application/openmetrics-text", 1);
		int proto = 0, delimited = 0;
		double q = 1;
		for (const char *a = semi; (is_pb || is_om) && a < e;) {
			const char *b = memchr(a + 1, ';', (size_t)(e - a - 1));
			b = b ? b : e;
			span_t param = trimmed(a + 1, (size_t)(b - a - 1));
			const char *eq = memchr(param.s, '=', param.n);
			if (eq) {
				span_t name = trimmed(param.s, (size_t)(eq - param.s));
				span_t value = trimmed(eq + 1, (size_t)(param.s + param.n - eq - 1));
				if (span_is(name, "q", 1))
					q = qvalue(value);
				proto |= span_is(name, "proto", 1) && span_is(value, "io.prometheus.client.MetricFamily", 0);
				delimited |= span_is(name, "encoding", 1) && span_is(value, "delimited", 0);
			}
			a = b;
		}
		if (is_pb && proto && delimited && *pb < 0)
			*pb = q;
		if (is_om && *om < 0)
			*om = q;
		p = e + 1;
	}
}

/* The protobuf exposition when the Accept header asks for delimited
 * MetricFamily messages (Prometheus with native histograms on) at least
 * as much as for OpenMetrics; OpenMetrics when it lists that without
 * refusing it (q=0); Prometheus text otherwise, byte for byte as before.
 * Anything unknown, malformed or longer than BX_ACCEPT_MAX_BYTES is text. */
static int negotiate(const char *accept)
{
	double pb, om;
	accept_q(accept, &pb, &om);
	if (pb > 0 && pb >= om)
		return BX_FMT_PROTOBUF;
	return om > 0 ? BX_FMT_OPENMETRICS : BX_FMT_PROMETHEUS;
}

static const char index_page[] =
    "<!doctype html><html><head><title>billing-exporter</title></head><body>"
    "<h1>billing-exporter</h1><p>USDT probes of billing services as Prometheus metrics.</p>"
    "<ul><li><a href=\"/metrics\">/metrics</a></li><li><a href=\"/healthz\">/healthz</a></li></ul>"
    "</body></html>\n";

/* An answer: a 401 asks for basic auth, a 429 to come back in a second. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len,
                             enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_TOO_MANY_REQUESTS)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	enum MHD_Result ret = status == MHD_HTTP_UNAUTHORIZED ? MHD_queue_basic_auth_fail_response(c, "billing-exporter", r)
	                                                      : MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *body)
{
	return reply(c, status, "text/plain", (char *)body, strlen(body), MHD_RESPMEM_PERSISTENT);
}

/* A client certificate signed by client_ca_file, when there is one. */
static int client_verified(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t session = info ? (gnutls_session_t)info->tls_session : NULL;
	unsigned status = 0, count = 0;
	return session && gnutls_certificate_get_peers(session, &count) && count > 0 &&
	       gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0;
}

/* 1 with *ret set when c may not have what it asks for: no verified
 * client certificate (403), no or wrong credentials (401), or a new
 * password its peer may not have checked now (429, bx_web_auth). */
static int refuse(bx_http_t *h, struct MHD_Connection *c, enum MHD_Result *ret)
{
	if (h->web->client_ca_pem && !client_verified(c)) {
		*ret = text(c, MHD_HTTP_FORBIDDEN, "client certificate required\n");
		return 1;
	}
	if (h->web->user_count == 0)
		return 0;
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const conn_t *n = info ? info->socket_context : NULL;
	bx_peer_t nobody = { 0 }; /* untracked connections share one budget */
	char *password = NULL;
	char *user = MHD_basic_auth_get_username_password(c, &password);
	int auth = user && password ? bx_web_auth(h->web, n ? &n->peer : &nobody, user, password) : BX_AUTH_DENIED;
	if (password) {
		memset(password, 0, strlen(password));
		free(password);
	}
	free(user);
	if (auth == BX_AUTH_OK)
		return 0;
	*ret = auth == BX_AUTH_BUSY ? text(c, MHD_HTTP_TOO_MANY_REQUESTS, "try again shortly\n")
	                            : text(c, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
	return 1;
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
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (strcmp(url, "/healthz") == 0)
		return text(c, MHD_HTTP_OK, "ok\n");
	if (h->web) {
		enum MHD_Result denied;
		if (refuse(h, c, &denied))
			return denied;
	}
	if (strcmp(url, "/metrics") == 0) {
		const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
		int format = negotiate(accept);
		size_t len = 0;
		char *body = bx_render(h->ex, format, &len);
		if (!body)
			return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		return reply(c, MHD_HTTP_OK,
		             format == BX_FMT_PROTOBUF      ? BX_CONTENT_TYPE_PROTOBUF
		             : format == BX_FMT_OPENMETRICS ? BX_CONTENT_TYPE_OPENMETRICS
		                                            : BX_CONTENT_TYPE_PROMETHEUS,
		             body, len, MHD_RESPMEM_MUST_FREE);
	}
	if (strcmp(url, "/") == 0)
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", (char *)index_page,
		             sizeof index_page - 1, MHD_RESPMEM_PERSISTENT);
	return text(c, MHD_HTTP_NOT_FOUND, "not found\n");
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

int bx_http_is_loopback(const char *addr)
{
	struct in_addr v4;
	struct in6_addr v6;
	if (inet_pton(AF_INET, addr, &v4) == 1)
		return (ntohl(v4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, addr, &v6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
	return -1;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	bx_http_t *h = cls;
	conn_t *n = *socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!info)
			return; /* not reaped: libmicrohttpd's idle timeout still applies */
		if (!(n = calloc(1, sizeof *n))) {
			shutdown(info->connect_fd, SHUT_RDWR);
			return;
		}
		n->fd = info->connect_fd;
		n->since = bx_seconds(CLOCK_MONOTONIC);
		/* over its peer's limit, or a peer the kernel cannot name: cut
		 * before a byte is read, and libmicrohttpd closes it */
		n->admitted = bx_peer_of(n->fd, &n->peer) == 0 && bx_conn_limits_admit(h->limits, &n->peer);
		if (!n->admitted) {
			shutdown(n->fd, SHUT_RDWR);
			n->cut = 1;
		}
		pthread_mutex_lock(&h->lock);
		n->next = h->conns;
		if (h->conns)
			h->conns->prev = n;
		h->conns = n;
		pthread_mutex_unlock(&h->lock);
		*socket_context = n;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && n) {
		/* libmicrohttpd closes the socket after this returns: holding
		 * the lock here keeps the reaper off a number reused since */
		pthread_mutex_lock(&h->lock);
		if (n->prev)
			n->prev->next = n->next;
		else
			h->conns = n->next;
		if (n->next)
			n->next->prev = n->prev;
		pthread_mutex_unlock(&h->lock);
		if (n->admitted)
			bx_conn_limits_release(h->limits, &n->peer);
		free(n);
		*socket_context = NULL;
	}
}

/* A response sent: the next request on this connection gets a full
 * deadline of its own. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	bx_http_t *h = cls;
	(void)con_cls;
	(void)toe;
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	conn_t *n = info ? info->socket_context : NULL;
	if (!n)
		return;
	pthread_mutex_lock(&h->lock);
	n->since = bx_seconds(CLOCK_MONOTONIC);
	pthread_mutex_unlock(&h->lock);
}

static void *reap(void *arg)
{
	bx_http_t *h = arg;
	while (!bx_ticker_wait(&h->reaper_ticks, 200)) {
		double cutoff = bx_seconds(CLOCK_MONOTONIC) - h->request_seconds;
		pthread_mutex_lock(&h->lock);
		for (conn_t *n = h->conns; n; n = n->next)
			if (!n->cut && n->since < cutoff) {
				shutdown(n->fd, SHUT_RDWR);
				n->cut = 1;
			}
		pthread_mutex_unlock(&h->lock);
	}
	return NULL;
}

/* Descriptors open now (BPF links and maps, the listening socket...). */
static unsigned open_fds(void)
{
	unsigned n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int bx_http_serve(bx_http_t *h, bx_exporter_t *ex, const bx_http_limits_t *lim, unsigned *max_connections,
                  char *err, size_t errlen)
{
	h->ex = ex;
	h->web = lim->web;
	h->request_seconds = lim->request_seconds;

	/* What the open-files limit leaves, less a margin for libmicrohttpd's
	 * own descriptors (an epoll set and a wake-up per thread) and for
	 * --binary attachments made later. */
	struct rlimit rl;
	unsigned limit = lim->max_connections;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		unsigned long long room = rl.rlim_cur > open_fds() + 128ull ? rl.rlim_cur - open_fds() - 128ull : 0;
		if (room < limit)
			limit = (unsigned)room;
	}
	if (limit < SERVER_THREADS) {
		snprintf(err, errlen, "too few open files left for HTTP clients (raise the limit: ulimit -n)");
		return -1;
	}
	*max_connections = limit;
	/* libmicrohttpd holds up to limit, the policy a sixteenth fewer: room
	 * for connections refused and being closed, so the listening socket
	 * keeps being accepted from while a flood is cut */
	if (!(h->limits = bx_conn_limits_new(limit - limit / 16, lim->max_per_ip))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}

	if (listen(h->fd, 1024) != 0) {
		/* another process bound the port with SO_REUSEADDR too, and listened first */
		if (errno == EADDRINUSE)
			snprintf(err, errlen, "%s is in use (choose another with --listen ADDR:PORT)", h->where);
		else
			snprintf(err, errlen, "cannot listen on %s: %s", h->where, strerror(errno));
		return -1;
	}
	/* the server's threads share the socket: none may block in accept() */
	fcntl(h->fd, F_SETFL, fcntl(h->fd, F_GETFL) | O_NONBLOCK);
	pthread_mutex_init(&h->lock, NULL);
	bx_ticker_init(&h->reaper_ticks);
	if (pthread_create(&h->reaper, NULL, reap, h) != 0) {
		snprintf(err, errlen, "cannot start the thread that enforces the request deadline");
		bx_ticker_destroy(&h->reaper_ticks);
		return -1;
	}
	h->reaper_running = 1;

	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD;
	bx_web_config_t *web = lim->web;
	int tls = web && web->cert_pem;
	if (tls)
		flags |= MHD_USE_TLS;
	struct MHD_OptionItem opts[16];
	size_t n = 0;
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, h->fd, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, SERVER_THREADS, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, (intptr_t)limit, NULL };
	/* the per-peer limits are conn_limits.c's; libmicrohttpd's counts
	 * addresses, which one local user has millions of */
	/* idle between bytes; the reaper bounds the whole request */
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)lim->request_seconds, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h };
	if (tls) {
		/* exporter-toolkit's floor: TLS 1.2 */
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
			                             (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, web->cert_pem };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, web->key_pem };
		if (web->client_ca_pem)
			opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, web->client_ca_pem };
	}
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
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
	if (h->reaper_running) {
		bx_ticker_stop(&h->reaper_ticks);
		pthread_join(h->reaper, NULL);
	}
	if (h->daemon)
		MHD_stop_daemon(h->daemon); /* closes the socket it was given */
	else
		close(h->fd);
	if (h->reaper_running) {
		bx_ticker_destroy(&h->reaper_ticks);
		pthread_mutex_destroy(&h->lock);
	}
	bx_conn_limits_free(h->limits);
	free(h);
}
