/*
 * billingd -- a small billing service instrumented with billing-probes.
 *
 * HTTP/JSON on libmicrohttpd, SQLite (WAL) for the books, a simulated card
 * gateway.  Every business event fires its probe; see README.md beside
 * this file.  SIGINT/SIGTERM: in-flight requests finish, then the database
 * is checkpointed and closed.
 */
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "gateway.h"
#include "options.h"
#include "request_deadline.h"
#include "server.h"

/* Longest we wait for in-flight requests at shutdown. */
#define DRAIN_TIMEOUT_MS 10000

static char *default_db_path(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX];
	char *path;
	if (tmp == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	if (snprintf(dir, sizeof(dir), "%s/billingd-XXXXXX", tmp) >= (int)sizeof(dir) ||
	    mkdtemp(dir) == NULL) {
		fprintf(stderr, "billingd: cannot make a temporary directory in %s\n", tmp);
		return NULL;
	}
	path = malloc(strlen(dir) + sizeof("/billing.db"));
	if (path != NULL)
		sprintf(path, "%s/billing.db", dir);
	return path;
}

int main(int argc, char **argv)
{
	billingd_options_t opts;
	char err[512];
	char *owned_path = NULL;
	const char *db_path;
	sigset_t stop_signals;
	unsigned int port, unfinished;
	int sig = 0, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = options_parse(&opts, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	/* before any JSON object: jansson takes its seed at its first */
	if (opts.json_seed != 0)
		json_object_seed(opts.json_seed);

	db_path = opts.db_path;
	if (db_path == NULL) {
		owned_path = default_db_path();
		if (owned_path == NULL)
			return 1;
		db_path = owned_path;
	}
	gateway_configure(&opts.gateway, opts.seed);
	if (db_init(db_path, err, sizeof(err)) != 0) {
		fprintf(stderr, "billingd: %s\n", err);
		return 1;
	}

	/* Block the stop signals before any thread exists, so every worker
	 * inherits the mask and only sigwait() below sees them. */
	/* A shell starts background jobs with SIGINT ignored, and an ignored
	 * signal never reaches sigwait(): take the default disposition back. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	signal(SIGPIPE, SIG_IGN);

	port = server_start(&opts);
	if (port == 0) {
		db_shutdown();
		return 1;
	}
	printf("billingd: listening on http://%s:%u/ (pid %ld, %u threads, db %s)\n",
	       opts.listen_address, port, (long)getpid(), opts.threads, db_path);

	if (sigwait(&stop_signals, &sig) != 0)
		sig = SIGTERM;
	server_refuse_new();
	printf("billingd: %s received, finishing in-flight requests\n",
	       sig == SIGINT ? "SIGINT" : "SIGTERM");
	unfinished = server_drain(DRAIN_TIMEOUT_MS);
	server_stop();
	rc = db_shutdown();
	if (request_deadline_closed() > 0)
		printf("billingd: closed %llu connections that sent no whole request in time\n",
		       (unsigned long long)request_deadline_closed());
	if (unfinished > 0)
		fprintf(stderr, "billingd: %u requests were still running after %d ms\n", unfinished,
		        DRAIN_TIMEOUT_MS);
	printf("billingd: stopped %s after %llu requests\n",
	       rc == 0 && unfinished == 0 ? "cleanly" : "with errors",
	       (unsigned long long)server_requests_answered());
	free(owned_path);
	return rc == 0 && unfinished == 0 ? 0 : 1;
}
