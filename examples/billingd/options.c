/*
 * options.c -- billingd's command line, strictly (examples/cli).
 */
#include "options.h"

#include <string.h>

#include "cli.h"

static int parse_distribution(const char *text, void *out)
{
	return gateway_distribution_parse(text, out);
}

int options_parse(billingd_options_t *opts, int argc, char **argv)
{
	const cli_option_t options[] = {
		{ "port", "N", CLI_UINT, &opts->port, .imin = 0, .imax = 65535,
		  .help = "TCP port on 127.0.0.1 (default 8080; 0: ephemeral)" },
		{ "listen", "ADDR", CLI_TEXT, &opts->listen_address, .wants = "an IPv4 address",
		  .help = "IPv4 address to listen on (default 127.0.0.1)" },
		{ "db", "PATH", CLI_TEXT, &opts->db_path, .wants = "a file path",
		  .help = "SQLite database file (default: new file in a temp dir)" },
		{ "threads", "N", CLI_UINT, &opts->threads, .imin = 1, .imax = 256,
		  .help = "worker threads (default 8)" },
		{ "max-connections", "N", CLI_UINT, &opts->max_connections, .imin = 16, .imax = 1000000,
		  .given = &opts->max_connections_given,
		  .help = "open connections at most (default 4096; needs N+64 open files)" },
		{ "request-timeout", "S", CLI_UINT, &opts->request_timeout, .imin = 1, .imax = 3600,
		  .help = "seconds a client has to send a whole request (default 10;\n"
		          "1 once 3/4 of the connections are open)" },
		{ "gateway-latency-ms", "MS", CLI_NUMBER, &opts->gateway.latency_ms, .min = 0.0,
		  .max = 10000.0,
		  .help = "mean simulated card-gateway latency (default 1; 0: none)" },
		{ "gateway-latency-dist", "D", CLI_PARSED, &opts->gateway.distribution,
		  .parse = parse_distribution, .wants = "fixed, uniform or exponential",
		  .help = "fixed | uniform | exponential (default exponential)" },
		{ "decline-rate", "R", CLI_NUMBER, &opts->gateway.decline_rate, .min = 0.0, .max = 1.0,
		  .help = "fraction of authorisations declined, 0..1 (default 0.1)" },
		{ "seed", "N", CLI_U64, &opts->seed, .imin = 0, .imax = UINT64_MAX,
		  .help = "seed of the gateway simulation (default 1)" },
	};

	memset(opts, 0, sizeof(*opts));
	opts->listen_address = "127.0.0.1";
	opts->port = 8080;
	opts->threads = 8;
	opts->max_connections = 4096;
	opts->request_timeout = 10;
	opts->gateway.latency_ms = 1.0;
	opts->gateway.distribution = GATEWAY_LATENCY_EXPONENTIAL;
	opts->gateway.decline_rate = 0.1;
	opts->seed = 1;
	return cli_parse("billingd", options, sizeof(options) / sizeof(options[0]), argc, argv);
}
