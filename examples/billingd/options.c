/*
 * options.c -- billingd's command line, strictly (tools/options).
 */
#include "options.h"

#include <string.h>

#include "option_table.h"

static int parse_distribution(const char *text, void *out, char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	return gateway_distribution_parse(text, out);
}

int options_parse(billingd_options_t *opts, int argc, char **argv)
{
	const opt_option_t options[] = {
		{ "port", "N", OPT_UINT, &opts->port, .imin = 0, .imax = 65535,
		  .help = "TCP port on 127.0.0.1; 0: an ephemeral one", .init = "8080" },
		{ "listen", "ADDR", OPT_TEXT, &opts->listen_address, .wants = "an IPv4 address",
		  .help = "IPv4 address to listen on", .init = "127.0.0.1" },
		{ "db", "PATH", OPT_TEXT, &opts->db_path, .wants = "a file path",
		  .help = "SQLite database file (default: new file in a temp dir)" },
		{ "threads", "N", OPT_UINT, &opts->threads, .imin = 1, .imax = 256,
		  .help = "worker threads", .init = "8" },
		{ "max-connections", "N", OPT_UINT, &opts->max_connections, .imin = 16, .imax = 1000000,
		  .given = &opts->max_connections_given,
		  .help = "open connections at most; needs N+64 open files", .init = "4096" },
		{ "request-timeout", "S", OPT_UINT, &opts->request_timeout, .imin = 1, .imax = 3600,
		  .help = "seconds a client has to send a whole request;\n"
		          "1 once 3/4 of the connections are open",
		  .init = "10" },
		{ "gateway-latency-ms", "MS", OPT_NUMBER, &opts->gateway.latency_ms, .min = 0.0,
		  .max = 10000.0,
		  .help = "mean simulated card-gateway latency; 0: none", .init = "1" },
		{ "gateway-latency-dist", "D", OPT_PARSED, &opts->gateway.distribution,
		  .parse = parse_distribution, .wants = "fixed, uniform or exponential",
		  .help = "fixed | uniform | exponential", .init = "exponential" },
		{ "decline-rate", "R", OPT_NUMBER, &opts->gateway.decline_rate, .min = 0.0, .max = 1.0,
		  .help = "fraction of authorisations declined, 0..1", .init = "0.1" },
		{ "seed", "N", OPT_U64, &opts->seed, .imin = 0, .imax = UINT64_MAX,
		  .help = "seed of the gateway simulation", .init = "1" },
		{ "json-seed", "N", OPT_UINT, &opts->json_seed, .imin = 0, .imax = UINT32_MAX,
		  .help = "seed of JSON objects' hashing; 0: a random one\n"
		          "(a fixed one makes runs repeat exactly: the benches)",
		  .init = "0" },
	};

	const opt_table_t table = { .prog = "billingd", .usage = "[options]", .options = options, .n = sizeof(options) / sizeof(options[0]) };

	memset(opts, 0, sizeof(*opts));
	return opt_parse(&table, argc, argv);
}
