/*
 * options.c -- parse billingd's command line strictly: a typo in a number
 * is an error, not a zero.
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: billingd [options]\n"
    "  --port N                 TCP port on 127.0.0.1 (default 8080; 0: ephemeral)\n"
    "  --listen ADDR            IPv4 address to listen on (default 127.0.0.1)\n"
    "  --db PATH                SQLite database file (default: new file in a temp dir)\n"
    "  --threads N              worker threads (default 8)\n"
    "  --max-connections N      open connections at most (default 4096; needs N+64 open files)\n"
    "  --request-timeout S      seconds a client has to send a whole request (default 10;\n"
    "                           1 once 3/4 of the connections are open)\n"
    "  --gateway-latency-ms MS  mean simulated card-gateway latency (default 1; 0: none)\n"
    "  --gateway-latency-dist D fixed | uniform | exponential (default exponential)\n"
    "  --decline-rate R         fraction of authorisations declined, 0..1 (default 0.1)\n"
    "  --seed N                 seed of the gateway simulation (default 1)\n"
    "  --help                   this text\n";

static int parse_uint(const char *opt, const char *text, unsigned long long min,
                      unsigned long long max, unsigned long long *out)
{
	char *end = NULL;
	errno = 0;
	if (text[0] == '-' || text[0] == '\0')
		goto bad;
	*out = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0' || *out < min || *out > max)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "billingd: %s wants an integer %llu..%llu, got '%s'\n", opt, min, max, text);
	return -1;
}

static int parse_double(const char *opt, const char *text, double min, double max, double *out)
{
	char *end = NULL;
	errno = 0;
	*out = strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !isfinite(*out) || *out < min || *out > max) {
		fprintf(stderr, "billingd: %s wants a number %g..%g, got '%s'\n", opt, min, max, text);
		return -1;
	}
	return 0;
}

int options_parse(billingd_options_t *opts, int argc, char **argv)
{
	enum { OPT_PORT = 1,
	       OPT_LISTEN,
	       OPT_DB,
	       OPT_THREADS,
	       OPT_MAX_CONN,
	       OPT_REQ_TIMEOUT,
	       OPT_LATENCY,
	       OPT_DIST,
	       OPT_DECLINE,
	       OPT_SEED,
	       OPT_HELP };
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, OPT_PORT },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "db", required_argument, NULL, OPT_DB },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
		{ "request-timeout", required_argument, NULL, OPT_REQ_TIMEOUT },
		{ "gateway-latency-ms", required_argument, NULL, OPT_LATENCY },
		{ "gateway-latency-dist", required_argument, NULL, OPT_DIST },
		{ "decline-rate", required_argument, NULL, OPT_DECLINE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long u;
	int c;

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

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_PORT:
			if (parse_uint("--port", optarg, 0, 65535, &u) != 0)
				return -1;
			opts->port = (unsigned int)u;
			break;
		case OPT_LISTEN:
			opts->listen_address = optarg;
			break;
		case OPT_DB:
			if (optarg[0] == '\0') {
				fprintf(stderr, "billingd: --db wants a file path\n");
				return -1;
			}
			opts->db_path = optarg;
			break;
		case OPT_THREADS:
			if (parse_uint("--threads", optarg, 1, 256, &u) != 0)
				return -1;
			opts->threads = (unsigned int)u;
			break;
		case OPT_MAX_CONN:
			if (parse_uint("--max-connections", optarg, 16, 1000000, &u) != 0)
				return -1;
			opts->max_connections = (unsigned int)u;
			opts->max_connections_given = 1;
			break;
		case OPT_REQ_TIMEOUT:
			if (parse_uint("--request-timeout", optarg, 1, 3600, &u) != 0)
				return -1;
			opts->request_timeout = (unsigned int)u;
			break;
		case OPT_LATENCY:
			if (parse_double("--gateway-latency-ms", optarg, 0.0, 10000.0,
			                 &opts->gateway.latency_ms) != 0)
				return -1;
			break;
		case OPT_DIST:
			if (gateway_distribution_parse(optarg, &opts->gateway.distribution) != 0) {
				fprintf(stderr, "billingd: --gateway-latency-dist wants fixed, uniform or "
				                "exponential, got '%s'\n",
				        optarg);
				return -1;
			}
			break;
		case OPT_DECLINE:
			if (parse_double("--decline-rate", optarg, 0.0, 1.0,
			                 &opts->gateway.decline_rate) != 0)
				return -1;
			break;
		case OPT_SEED:
			if (parse_uint("--seed", optarg, 0, UINT64_MAX, &u) != 0)
				return -1;
			opts->seed = u;
			break;
		case OPT_HELP:
			fputs(usage, stdout);
			return 1;
		default:
			fprintf(stderr, "billingd: unknown or incomplete option '%s' (try --help)\n",
			        argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "billingd: unexpected argument '%s' (try --help)\n", argv[optind]);
		return -1;
	}
	return 0;
}
