/*
 * options.h -- billingd's command line.
 */
#ifndef BILLINGD_OPTIONS_H
#define BILLINGD_OPTIONS_H

#include <stdint.h>

#include "gateway.h"

typedef struct billingd_options {
	const char *listen_address; /* IPv4 literal; 127.0.0.1 unless told */
	uint32_t port;              /* 0: an ephemeral port, printed at start */
	const char *db_path;        /* NULL: a new file in a temporary directory */
	uint32_t threads;           /* HTTP worker threads, each with its own DB connection */
	uint32_t max_connections;   /* open connections at most */
	int max_connections_given;  /* on the command line: must fit, not shrink */
	uint32_t request_timeout;   /* seconds a client has to send a whole request */
	gateway_config_t gateway;
	uint64_t seed;
	uint32_t json_seed; /* jansson's hashing; 0: a random one (its own default) */
} billingd_options_t;

/* Fills opts from argv.  Returns 0 to run, > 0 when --help or the option
 * table was printed, -1 after printing one line about bad input on stderr. */
int options_parse(billingd_options_t *opts, int argc, char **argv);

#endif /* BILLINGD_OPTIONS_H */
