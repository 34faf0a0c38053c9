/*
 * web_config.h -- --web-config FILE: TLS and basic authentication for
 * /metrics, in the YAML of Prometheus exporter-toolkit's web config, so a
 * Prometheus set up for any other exporter scrapes this one the same way:
 *
 *   tls_server_config:
 *     cert_file: server.crt        # relative paths: to the file's directory
 *     key_file: server.key
 *     client_ca_file: ca.crt       # optional: then a client certificate
 *     client_auth_type: RequireAndVerifyClientCert   # signed by it is required
 *   basic_auth_users:
 *     prometheus: $2y$10$...       # bcrypt hashes only
 *
 * Anything else (an unknown key, a value of the wrong kind, a hash that is
 * not bcrypt, a certificate that does not load or match its key) is
 * refused when the file is read, in one line.
 */
#ifndef BX_WEB_CONFIG_H
#define BX_WEB_CONFIG_H

#include <stddef.h>

#include "peer.h"

typedef struct bx_web_user {
	char *name;
	char *hash; /* bcrypt: $2a$, $2b$ or $2y$ */
} bx_web_user_t;

typedef struct bx_web_config {
	/* PEM text of each file, NUL-terminated (libmicrohttpd takes memory);
	 * all NULL when there is no tls_server_config */
	char *cert_pem, *key_pem, *client_ca_pem;
	bx_web_user_t *users;
	size_t user_count;
	struct bx_auth_cache *cache; /* credentials verified before */
} bx_web_config_t;

/* Read and check path into c.  0, or -1 with a one-line reason in err. */
int bx_web_config_read(const char *path, bx_web_config_t *c, char *err, size_t errlen);
void bx_web_config_free(bx_web_config_t *c);

enum { BX_AUTH_OK = 0,
       BX_AUTH_DENIED = -1,
       BX_AUTH_BUSY = -2 }; /* the peer's budget is spent, or its bcrypt slot busy */

#define BX_AUTH_CACHE_SECONDS 600 /* a verified pair is recognised this long */

/* Basic authentication of user:password from peer against
 * basic_auth_users.  A pair verified in the last BX_AUTH_CACHE_SECONDS
 * is recognised by its keyed digest without bcrypt; a new one costs a
 * bcrypt evaluation, charged to peer's budget of failures
 * (auth_budget.c): a peer that spent it gets BX_AUTH_BUSY at once, a
 * peer with recent failures checks in a slot of its own (BX_AUTH_BUSY
 * while it is taken), a peer without waits briefly for the other slot.
 * Unknown names cost the same as known ones; hashes are compared in
 * constant time. */
int bx_web_auth(bx_web_config_t *c, const bx_peer_t *peer, const char *user, const char *password);

#endif /* BX_WEB_CONFIG_H */
