/*
 * http.h -- /metrics, /healthz and / over libmicrohttpd.
 */
#ifndef BX_HTTP_H
#define BX_HTTP_H

#include <stddef.h>

#include "exporter.h"

#define BX_DEFAULT_ADDRESS "127.0.0.1"
#define BX_DEFAULT_PORT 9477

typedef struct bx_http bx_http_t;

/* Bind addr:port (port 0: any free one) without listening, so the port is
 * ours and known before the probes are attached while connections are
 * still refused.  NULL with a one-line reason in err (port in use...).
 * *bound_port receives the port actually bound. */
bx_http_t *bx_http_bind(const char *addr, int port, int *bound_port, char *err, size_t errlen);
/* Listen and serve ex from a thread of libmicrohttpd's: call once every
 * probe is attached.  -1 with a one-line reason in err. */
int bx_http_serve(bx_http_t *h, bx_exporter_t *ex, char *err, size_t errlen);
void bx_http_stop(bx_http_t *h);

/* Take a snapshot and write it in the given format (bx_format_t) into a
 * malloc'd buffer, timing the whole as the next scrape duration.  Shared
 * by the HTTP handler and --once / --interval.  NULL when out of memory. */
char *bx_render(bx_exporter_t *ex, int format, size_t *len);

#endif /* BX_HTTP_H */
