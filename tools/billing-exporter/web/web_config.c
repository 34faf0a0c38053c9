/*
 * web_config.c -- read --web-config (web_config.h) with libyaml's document
 * loader, strictly: the few keys below and nothing else, so a typo in a
 * security setting is an error rather than a setting silently left out.
 */
#include "web_config.h"

#include <crypt.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <yaml.h>

#include "peer.h"
#include "ticker.h"

#define PEM_MAX (1024 * 1024)
#define DIGEST_LEN 32        /* HMAC-SHA-256 */
#define CLEAN_WAIT_SECONDS 2 /* a clean peer waits this long for its slot */

/* One bcrypt evaluation at a time in each slot (auth_budget.c). */
typedef struct bcrypt_slot {
	pthread_mutex_t lock;
	struct crypt_data *crypt; /* crypt_rn's scratch, under lock */
} bcrypt_slot_t;

struct bx_auth_cache {
	pthread_mutex_t lock;          /* the digests */
	unsigned char key[DIGEST_LEN]; /* the digests' HMAC key, random per process */
	/* per user: the digest of the last password verified, valid until expires */
	unsigned char (*digest)[DIGEST_LEN];
	double *expires;
	bcrypt_slot_t clean, suspect;
	int clean_waiting; /* a check waits for the clean slot (under lock) */
	bx_auth_budget_t *budget;
};

typedef struct reader {
	yaml_document_t doc;
	const char *path;
	char dir[4096]; /* the file's directory, for relative paths */
	char *err;
	size_t errlen;
} reader_t;

static int __attribute__((format(printf, 3, 4))) fail(reader_t *r, const yaml_node_t *n, const char *fmt, ...)
{
	char what[8400], line[32] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (n)
		snprintf(line, sizeof line, " line %lu", (unsigned long)n->start_mark.line + 1);
	snprintf(r->err, r->errlen, "--web-config %s%s: %s", r->path, line, what);
	return -1;
}

/* A key with nothing after it ("tls_server_config:") */
static int is_null(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	const char *v = (const char *)n->data.scalar.value;
	return !*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0;
}

static const char *scalar(reader_t *r, const yaml_node_t *n, const char *key)
{
	if (n->type != YAML_SCALAR_NODE || is_null(n)) {
		fail(r, n, "%s wants a string", key);
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

/* Each key once, each one of names[]. */
static int check_keys(reader_t *r, const yaml_node_t *map, const char *where, const char *const *names)
{
	if (map->type != YAML_MAPPING_NODE)
		return fail(r, map, "%s wants a mapping", where);
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
		if (!k || k->type != YAML_SCALAR_NODE)
			return fail(r, k, "%s: a key that is not a string", where);
		const char *name = (const char *)k->data.scalar.value;
		int known = 0;
		for (const char *const *n = names; *n; n++)
			known |= strcmp(*n, name) == 0;
		if (!known)
			return fail(r, k, "%s is not a key billing-exporter reads (docs/security.md lists them)", name);
		for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
			const yaml_node_t *qk = yaml_document_get_node(&r->doc, q->key);
			if (strcmp((const char *)qk->data.scalar.value, name) == 0)
				return fail(r, k, "%s given twice", name);
		}
	}
	return 0;
}

static yaml_node_t *lookup(reader_t *r, const yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
		if (strcmp((const char *)k->data.scalar.value, key) == 0) {
			yaml_node_t *v = yaml_document_get_node(&r->doc, p->value);
			return v && !is_null(v) ? v : NULL;
		}
	}
	return NULL;
}

/* The whole of a PEM file named by key (relative to the config's
 * directory), NUL-terminated, into *out. */
static int read_pem(reader_t *r, const yaml_node_t *n, const char *key, char **out)
{
	const char *name = scalar(r, n, key);
	if (!name)
		return -1;
	char path[8192];
	snprintf(path, sizeof path, "%s%s", name[0] == '/' ? "" : r->dir, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return fail(r, n, "%s %s: %s", key, path, strerror(errno));
	char *buf = malloc(PEM_MAX + 1);
	size_t len = buf ? fread(buf, 1, PEM_MAX + 1, f) : 0;
	fclose(f);
	if (!buf || len == 0 || len > PEM_MAX || memchr(buf, 0, len)) {
		free(buf);
		return fail(r, n, "%s %s: empty, over 1 MiB or not PEM text", key, path);
	}
	buf[len] = 0;
	*out = buf;
	return 0;
}

static int read_tls(reader_t *r, const yaml_node_t *tls, bx_web_config_t *c)
{
	static const char *const keys[] = { "cert_file", "key_file", "client_ca_file", "client_auth_type", NULL };
	if (check_keys(r, tls, "tls_server_config", keys) != 0)
		return -1;
	const yaml_node_t *cert = lookup(r, tls, "cert_file"), *key = lookup(r, tls, "key_file");
	const yaml_node_t *ca = lookup(r, tls, "client_ca_file"), *auth = lookup(r, tls, "client_auth_type");
	if (!cert || !key)
		return fail(r, tls, "%s", "tls_server_config needs cert_file and key_file");
	if (auth) {
		const char *a = scalar(r, auth, "client_auth_type");
		if (!a)
			return -1;
		/* what a client CA means here; the other exporter-toolkit
		 * policies would accept a client the CA never signed */
		const char *want = ca ? "RequireAndVerifyClientCert" : "NoClientCert";
		if (strcmp(a, want) != 0)
			return fail(r, auth, "client_auth_type %.60s: %s %s client_ca_file is the only policy read", a, want,
			            ca ? "with a" : "without");
	}
	if (read_pem(r, cert, "cert_file", &c->cert_pem) != 0 || read_pem(r, key, "key_file", &c->key_pem) != 0 ||
	    (ca && read_pem(r, ca, "client_ca_file", &c->client_ca_pem) != 0))
		return -1;

	/* Load them as the server will, so a bad file is refused now rather
	 * than once the probes are attached. */
	gnutls_certificate_credentials_t cred;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return fail(r, NULL, "%s", "out of memory");
	gnutls_datum_t cd = { (unsigned char *)c->cert_pem, (unsigned)strlen(c->cert_pem) };
	gnutls_datum_t kd = { (unsigned char *)c->key_pem, (unsigned)strlen(c->key_pem) };
	int rc = gnutls_certificate_set_x509_key_mem2(cred, &cd, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	int ca_rc = 1;
	if (rc >= 0 && c->client_ca_pem) {
		gnutls_datum_t ad = { (unsigned char *)c->client_ca_pem, (unsigned)strlen(c->client_ca_pem) };
		ca_rc = gnutls_certificate_set_x509_trust_mem(cred, &ad, GNUTLS_X509_FMT_PEM);
	}
	gnutls_certificate_free_credentials(cred);
	if (rc < 0)
		return fail(r, cert, "cert_file and key_file: %s", gnutls_strerror(rc));
	if (ca_rc <= 0)
		return fail(r, ca, "client_ca_file: %s", ca_rc < 0 ? gnutls_strerror(ca_rc) : "no certificate in it");
	return 0;
}

static int read_users(reader_t *r, const yaml_node_t *users, bx_web_config_t *c)
{
	if (users->type != YAML_MAPPING_NODE)
		return fail(r, users, "%s", "basic_auth_users wants a mapping of user: bcrypt hash");
	size_t n = (size_t)(users->data.mapping.pairs.top - users->data.mapping.pairs.start);
	c->users = calloc(n ? n : 1, sizeof *c->users);
	struct crypt_data *cd = calloc(1, sizeof *cd);
	if (!c->users || !cd) {
		free(cd);
		return fail(r, NULL, "%s", "out of memory");
	}
	for (yaml_node_pair_t *p = users->data.mapping.pairs.start; p < users->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
		const yaml_node_t *v = yaml_document_get_node(&r->doc, p->value);
		const char *name = k ? scalar(r, k, "a user name") : NULL;
		const char *hash = name && v ? scalar(r, v, name) : NULL;
		if (!name || !hash)
			break;
		if (!*name || strchr(name, ':')) {
			fail(r, k, "user name \"%s\": empty or with a ':' (basic auth cannot carry it)", name);
			break;
		}
		for (size_t i = 0; i < c->user_count; i++)
			if (strcmp(c->users[i].name, name) == 0) {
				fail(r, k, "user %s given twice", name);
				goto out;
			}
		const char *check = strncmp(hash, "$2a$", 4) == 0 || strncmp(hash, "$2b$", 4) == 0 ||
		                            strncmp(hash, "$2y$", 4) == 0
		                        ? crypt_rn("", hash, cd, (int)sizeof *cd)
		                        : NULL;
		if (!check || strlen(check) != strlen(hash)) {
			fail(r, v, "the hash of user %s is not a bcrypt hash ($2y$..., e.g. from htpasswd -nBC 10)", name);
			break;
		}
		c->users[c->user_count].name = strdup(name);
		c->users[c->user_count].hash = strdup(hash);
		if (!c->users[c->user_count].name || !c->users[c->user_count].hash) {
			fail(r, NULL, "%s", "out of memory");
			break;
		}
		c->user_count++;
	}
out:
	free(cd);
	return c->user_count == n ? 0 : -1;
}

static int make_slot(bcrypt_slot_t *s)
{
	pthread_mutex_init(&s->lock, NULL);
	s->crypt = calloc(1, sizeof *s->crypt);
	return s->crypt ? 0 : -1;
}

static void free_slot(bcrypt_slot_t *s)
{
	pthread_mutex_destroy(&s->lock);
	free(s->crypt);
}

static int make_cache(bx_web_config_t *c)
{
	struct bx_auth_cache *a = calloc(1, sizeof *a);
	if (!a)
		return -1;
	c->cache = a;
	pthread_mutex_init(&a->lock, NULL);
	int slots = make_slot(&a->clean) | make_slot(&a->suspect);
	a->digest = calloc(c->user_count ? c->user_count : 1, sizeof *a->digest);
	a->expires = calloc(c->user_count ? c->user_count : 1, sizeof *a->expires);
	a->budget = bx_auth_budget_new();
	return slots == 0 && a->digest && a->expires && a->budget &&
	               gnutls_rnd(GNUTLS_RND_KEY, a->key, sizeof a->key) == 0
	           ? 0
	           : -1;
}

int bx_web_config_read(const char *path, bx_web_config_t *c, char *err, size_t errlen)
{
	reader_t r = { .path = path, .err = err, .errlen = errlen };
	yaml_parser_t parser;
	memset(c, 0, sizeof *c);
	const char *slash = strrchr(path, '/');
	if (slash && (size_t)(slash - path + 1) < sizeof r.dir)
		snprintf(r.dir, sizeof r.dir, "%.*s", (int)(slash - path + 1), path);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "--web-config %s: %s", path, strerror(errno));
		return -1;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	int ok = yaml_parser_load(&parser, &r.doc);
	fclose(f);
	if (!ok) {
		snprintf(err, errlen, "--web-config %s line %lu: %s", path, (unsigned long)parser.problem_mark.line + 1,
		         parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		return -1;
	}
	yaml_parser_delete(&parser);

	static const char *const keys[] = { "tls_server_config", "basic_auth_users", NULL };
	yaml_node_t *root = yaml_document_get_root_node(&r.doc);
	int rc = -1;
	if (!root || is_null(root)) {
		rc = 0; /* an empty file: no TLS, no users */
	} else if (check_keys(&r, root, "the file", keys) == 0) {
		yaml_node_t *tls = lookup(&r, root, "tls_server_config");
		yaml_node_t *users = lookup(&r, root, "basic_auth_users");
		rc = (tls && read_tls(&r, tls, c) != 0) || (users && read_users(&r, users, c) != 0) ? -1 : 0;
	}
	yaml_document_delete(&r.doc);
	if (rc == 0 && make_cache(c) != 0) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (rc != 0)
		bx_web_config_free(c);
	return rc;
}

void bx_web_config_free(bx_web_config_t *c)
{
	for (size_t i = 0; i < c->user_count; i++) {
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	free(c->users);
	if (c->key_pem)
		memset(c->key_pem, 0, strlen(c->key_pem));
	free(c->cert_pem);
	free(c->key_pem);
	free(c->client_ca_pem);
	if (c->cache) {
		pthread_mutex_destroy(&c->cache->lock);
		free_slot(&c->cache->clean);
		free_slot(&c->cache->suspect);
		bx_auth_budget_free(c->cache->budget);
		memset(c->cache->key, 0, sizeof c->cache->key);
		free(c->cache->digest);
		free(c->cache->expires);
		free(c->cache);
	}
	memset(c, 0, sizeof *c);
}

static int same_bytes(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(x[i] ^ y[i]);
	return d == 0;
}

/* The keyed digest of user NUL password into digest: 0, or -1. */
static int pair_digest(const struct bx_auth_cache *a, const char *user, const char *password,
                       unsigned char *digest)
{
	size_t ul = strlen(user), pl = strlen(password);
	char *both = malloc(ul + pl + 2);
	if (!both)
		return -1;
	memcpy(both, user, ul + 1);
	memcpy(both + ul + 1, password, pl + 1);
	int rc = gnutls_hmac_fast(GNUTLS_MAC_SHA256, a->key, sizeof a->key, both, ul + pl + 2, digest);
	memset(both, 0, ul + pl + 2);
	free(both);
	return rc < 0 ? -1 : 0;
}

/* The slot for this check, locked; NULL when it stays busy.  One check
 * at most waits for the clean slot: each waiter holds a server thread. */
static bcrypt_slot_t *lock_slot(struct bx_auth_cache *a, int budget)
{
	if (budget == BX_BUDGET_SUSPECT)
		return pthread_mutex_trylock(&a->suspect.lock) == 0 ? &a->suspect : NULL;
	if (pthread_mutex_trylock(&a->clean.lock) == 0)
		return &a->clean;
	pthread_mutex_lock(&a->lock);
	int wait = !a->clean_waiting;
	a->clean_waiting = 1;
	pthread_mutex_unlock(&a->lock);
	if (!wait)
		return NULL;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += CLEAN_WAIT_SECONDS;
	int locked = pthread_mutex_timedlock(&a->clean.lock, &until) == 0;
	pthread_mutex_lock(&a->lock);
	a->clean_waiting = 0;
	pthread_mutex_unlock(&a->lock);
	return locked ? &a->clean : NULL;
}

int bx_web_auth(bx_web_config_t *c, const bx_peer_t *peer, const char *user, const char *password)
{
	struct bx_auth_cache *a = c->cache;
	if (c->user_count == 0 || !a)
		return BX_AUTH_DENIED;
	size_t u = c->user_count; /* not a user */
	for (size_t i = 0; i < c->user_count; i++)
		if (strcmp(c->users[i].name, user) == 0)
			u = i;

	/* The digest binds name and password under a key no one else has: a
	 * cached entry says this very pair passed bcrypt, and a copy of the
	 * cache says nothing about the password. */
	unsigned char digest[DIGEST_LEN];
	if (pair_digest(a, user, password, digest) != 0)
		return BX_AUTH_DENIED;
	double now = bx_seconds(CLOCK_MONOTONIC);
	if (u < c->user_count) {
		pthread_mutex_lock(&a->lock);
		int hit = a->expires[u] > now && same_bytes(a->digest[u], digest, DIGEST_LEN);
		pthread_mutex_unlock(&a->lock);
		if (hit)
			return BX_AUTH_OK;
	}

	int budget = bx_auth_budget_take(a->budget, peer, now);
	bcrypt_slot_t *slot = budget == BX_BUDGET_SPENT ? NULL : lock_slot(a, budget);
	if (!slot) {
		if (budget != BX_BUDGET_SPENT)
			bx_auth_budget_done(a->budget, peer, 1); /* not checked: nothing to charge */
		return BX_AUTH_BUSY;
	}
	/* An unknown name is hashed against a real user's setting, so it
	 * takes as long as a wrong password. */
	const char *hash = c->users[u < c->user_count ? u : 0].hash;
	const char *got = crypt_rn(password, hash, slot->crypt, (int)sizeof *slot->crypt);
	size_t hl = strlen(hash);
	int ok = u < c->user_count && got && strlen(got) == hl && same_bytes(got, hash, hl);
	memset(slot->crypt, 0, sizeof *slot->crypt);
	pthread_mutex_unlock(&slot->lock);
	bx_auth_budget_done(a->budget, peer, ok);
	if (!ok)
		return BX_AUTH_DENIED;
	pthread_mutex_lock(&a->lock);
	memcpy(a->digest[u], digest, DIGEST_LEN);
	a->expires[u] = now + BX_AUTH_CACHE_SECONDS;
	pthread_mutex_unlock(&a->lock);
	return BX_AUTH_OK;
}
