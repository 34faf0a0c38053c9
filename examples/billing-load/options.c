/*
 * options.c -- parse billing-load's command line strictly.
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: billing-load [options]\n"
    "  --url URL           billingd's base URL (default http://127.0.0.1:8080)\n"
    "  --rate N            requests per second (default 0: as fast as possible)\n"
    "  --duration S        seconds to keep starting requests (default 10)\n"
    "  --concurrency N     connections, each with one request in flight (default 8)\n"
    "  --invalid-rate R    fraction of flows that send one bad request (default 0.05)\n"
    "  --refund-rate R     fraction of approved payments refunded (default 0.3)\n"
    "  --seed N            random seed of the request mix (default 1)\n"
    "  --json              print the summary as one JSON object\n"
    "  --help              this text\n";

static int parse_number(const char *opt, const char *text, double min, double max,
                        double *out)
{
	char *end = NULL;
	errno = 0;
	*out = strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !isfinite(*out) || *out < min ||
	    *out > max) {
		fprintf(stderr, "billing-load: %s wants a number %g..%g, got '%s'\n", opt, min, max,
		        text);
		return -1;
	}
	return 0;
}

static char url_buf[256];

int load_options_parse(load_options_t *opts, int argc, char **argv)
{
	enum { OPT_URL = 1,
	       OPT_RATE,
	       OPT_DURATION,
	       OPT_CONCURRENCY,
	       OPT_INVALID,
	       OPT_REFUND,
	       OPT_SEED,
	       OPT_JSON,
	       OPT_HELP };
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, OPT_URL },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "concurrency", required_argument, NULL, OPT_CONCURRENCY },
		{ "invalid-rate", required_argument, NULL, OPT_INVALID },
		{ "refund-rate", required_argument, NULL, OPT_REFUND },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	double v;
	int c;

	memset(opts, 0, sizeof(*opts));
	opts->url = "http://127.0.0.1:8080";
	opts->duration_s = 10.0;
	opts->concurrency = 8;
	opts->invalid_rate = 0.05;
	opts->refund_rate = 0.3;
	opts->seed = 1;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_URL:
			if (strncmp(optarg, "http://", 7) != 0 || strlen(optarg) > 200) {
				fprintf(stderr, "billing-load: --url wants http://HOST:PORT, got '%s'\n",
				        optarg);
				return -1;
			}
			/* Paths are appended to it: drop trailing slashes. */
			snprintf(url_buf, sizeof(url_buf), "%s", optarg);
			while (strlen(url_buf) > 7 && url_buf[strlen(url_buf) - 1] == '/')
				url_buf[strlen(url_buf) - 1] = '\0';
			opts->url = url_buf;
			break;
		case OPT_RATE:
			if (parse_number("--rate", optarg, 0, 1e6, &opts->rate) != 0)
				return -1;
			break;
		case OPT_DURATION:
			if (parse_number("--duration", optarg, 0.1, 86400, &opts->duration_s) != 0)
				return -1;
			break;
		case OPT_CONCURRENCY:
			if (parse_number("--concurrency", optarg, 1, 1000, &v) != 0)
				return -1;
			if (v != floor(v)) {
				fprintf(stderr, "billing-load: --concurrency wants an integer, got '%s'\n",
				        optarg);
				return -1;
			}
			opts->concurrency = (unsigned int)v;
			break;
		case OPT_INVALID:
			if (parse_number("--invalid-rate", optarg, 0, 1, &opts->invalid_rate) != 0)
				return -1;
			break;
		case OPT_REFUND:
			if (parse_number("--refund-rate", optarg, 0, 1, &opts->refund_rate) != 0)
				return -1;
			break;
		case OPT_SEED:
			if (parse_number("--seed", optarg, 0, 9007199254740992.0, &v) != 0)
				return -1;
			opts->seed = (uint64_t)v;
			break;
		case OPT_JSON:
			opts->json = 1;
			break;
		case OPT_HELP:
			fputs(usage, stdout);
			return 1;
		default:
			fprintf(stderr, "billing-load: unknown or incomplete option '%s' (try --help)\n",
			        argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "billing-load: unexpected argument '%s' (try --help)\n", argv[optind]);
		return -1;
	}
	return 0;
}
