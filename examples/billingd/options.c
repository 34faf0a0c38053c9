/*
 * options.c -- billingd's command line, strictly (examples/common/cli.h).
 */
#include "options.h"

#include <stdint.h>
#include <string.h>

#include "cli.h"

enum { PORT,
       LISTEN,
       DB,
       THREADS,
       MAX_CONNECTIONS,
       REQUEST_TIMEOUT,
       GATEWAY_LATENCY_MS,
       GATEWAY_LATENCY_DIST,
       DECLINE_RATE,
       SEED,
       JSON_SEED,
       N_OPTIONS };

static const cli_option_t options[N_OPTIONS] = {
	[PORT] = { "port", "N", "TCP port on 127.0.0.1; 0: an ephemeral one", "8080" },
	[LISTEN] = { "listen", "ADDR", "IPv4 address to listen on", "127.0.0.1" },
	[DB] = { "db", "PATH", "SQLite database file (default: new file in a temp dir)", NULL },
	[THREADS] = { "threads", "N", "worker threads", "8" },
	[MAX_CONNECTIONS] = { "max-connections", "N", "open connections at most; needs N+64 open files", "4096" },
	[REQUEST_TIMEOUT] = { "request-timeout", "S",
	                      "seconds a client has to send a whole request;\n"
	                      "1 once 3/4 of the connections are open",
	                      "10" },
	[GATEWAY_LATENCY_MS] = { "gateway-latency-ms", "MS", "mean simulated card-gateway latency; 0: none", "1" },
	[GATEWAY_LATENCY_DIST] = { "gateway-latency-dist", "D", "fixed | uniform | exponential", "exponential" },
	[DECLINE_RATE] = { "decline-rate", "R", "fraction of authorisations declined, 0..1", "0.1" },
	[SEED] = { "seed", "N", "seed of the gateway simulation", "1" },
	[JSON_SEED] = { "json-seed", "N",
	                "seed of JSON objects' hashing; 0: a random one\n"
	                "(a fixed one makes runs repeat exactly: the benches)",
	                "0" },
};

static int take(void *ctx, const cli_t *cli, size_t i, const char *text)
{
	billingd_options_t *opts = ctx;
	switch (i) {
	case PORT:
		return cli_uint32(cli, i, text, 0, 65535, &opts->port);
	case LISTEN:
		return cli_text(cli, i, text, "an IPv4 address", &opts->listen_address);
	case DB:
		return cli_text(cli, i, text, "a file path", &opts->db_path);
	case THREADS:
		return cli_uint32(cli, i, text, 1, 256, &opts->threads);
	case MAX_CONNECTIONS:
		/* given on the command line, it must fit, not shrink (server.c) */
		opts->max_connections_given = text != options[i].init;
		return cli_uint32(cli, i, text, 16, 1000000, &opts->max_connections);
	case REQUEST_TIMEOUT:
		return cli_uint32(cli, i, text, 1, 3600, &opts->request_timeout);
	case GATEWAY_LATENCY_MS:
		return cli_number(cli, i, text, 0.0, 10000.0, &opts->gateway.latency_ms);
	case GATEWAY_LATENCY_DIST:
		if (text == NULL || gateway_distribution_parse(text, &opts->gateway.distribution) != 0)
			return cli_wrong(cli, i, "fixed, uniform or exponential", text);
		return 0;
	case DECLINE_RATE:
		return cli_number(cli, i, text, 0.0, 1.0, &opts->gateway.decline_rate);
	case SEED:
		return cli_uint64(cli, i, text, &opts->seed);
	case JSON_SEED:
		return cli_uint32(cli, i, text, 0, UINT32_MAX, &opts->json_seed);
	}
	return -1;
}

int options_parse(billingd_options_t *opts, int argc, char **argv)
{
	const cli_t cli = { "billingd", options, N_OPTIONS };

	memset(opts, 0, sizeof(*opts));
	return cli_parse(&cli, take, opts, argc, argv);
}
