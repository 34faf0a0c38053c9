/*
 * http.h -- /metrics, /healthz and / over libmicrohttpd.
 */
#ifndef BX_HTTP_H
#define BX_HTTP_H

#include <stddef.h>

#include "exporter.h"
#include "web_config.h"

#define BX_DEFAULT_ADDRESS "127.0.0.1"
#define BX_DEFAULT_PORT 9477

typedef struct bx_http bx_http_t;

/* How the server treats its clients; bx_http_serve() documents each. */
typedef struct bx_http_limits {
	bx_web_config_t *web;     /* TLS and basic auth; NULL: plain HTTP, no auth */
	unsigned max_connections; /* all clients together */
	unsigned max_per_ip;      /* one peer (peer.h): a remote address, or a local user */
	unsigned request_seconds; /* from connection (or the previous response) to the response */
} bx_http_limits_t;

#define BX_DEFAULT_MAX_CONNECTIONS 4096
#define BX_DEFAULT_MAX_PER_IP 512
#define BX_DEFAULT_REQUEST_SECONDS 10

/* 1 when addr (as --listen gives it) is a loopback address: 127.0.0.0/8,
 * ::1 or ::ffff:127.x.y.z; 0 for another address, -1 for no address
 * (bx_http_bind says so). */
int bx_http_is_loopback(const char *addr);

/* Bind addr:port (port 0: any free one) without listening, so the port is
 * ours and known before the probes are attached while connections are
 * still refused.  NULL with a one-line reason in err (port in use...).
 * *bound_port receives the port actually bound. */
bx_http_t *bx_http_bind(const char *addr, int port, int *bound_port, char *err, size_t errlen);
/* Listen and serve ex from libmicrohttpd's threads: call once every
 * probe is attached.  One epoll loop per thread (no select(): no limit at
 * 1,024 descriptors), at most lim->max_connections clients (fewer when
 * the open-files limit leaves less room: *max_connections says how many),
 * lim->max_per_ip from one peer (a remote address, or a local user on
 * loopback: conn_limits.c, which also keeps a reserve for quiet peers
 * such as a health check), and each request answered or cut
 * lim->request_seconds after its connection was accepted or its previous
 * response sent, however slowly the client trickles bytes.  /healthz
 * answers without authentication (it says "ok" and nothing else, for
 * readiness probes that cannot log in).  -1 with a one-line reason in
 * err. */
int bx_http_serve(bx_http_t *h, bx_exporter_t *ex, const bx_http_limits_t *lim, unsigned *max_connections,
                  char *err, size_t errlen);
void bx_http_stop(bx_http_t *h);

/* Take a snapshot and write it in the given format (bx_format_t) into a
 * malloc'd buffer, timing the whole as the next scrape duration.  Shared
 * by the HTTP handler and --once / --interval.  NULL when out of memory. */
char *bx_render(bx_exporter_t *ex, int format, size_t *len);

#endif /* BX_HTTP_H */
