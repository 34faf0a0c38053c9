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
       BX_AUTH_BUSY = -2 }; /* another unknown password is being hashed */

/* Basic authentication of user:password against basic_auth_users.  A pair
 * verified before is recognised by its digest without bcrypt; a new one
 * costs a bcrypt evaluation, one at a time across the server's threads
 * (BX_AUTH_BUSY for the others), so a flood of wrong passwords costs one
 * core at most.  Unknown names cost the same as known ones; hashes are
 * compared in constant time. */
int bx_web_auth(bx_web_config_t *c, const char *user, const char *password);

#endif /* BX_WEB_CONFIG_H */
