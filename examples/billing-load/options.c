/*
 * options.c -- billing-load's command line, strictly (tools/options).
 */
#include "options.h"

#include <stdio.h>
#include <string.h>

#include "option_table.h"

static char url_buf[256];

/* http://HOST:PORT; paths are appended to it, so trailing slashes go. */
static int parse_url(const char *text, void *out, char *why, size_t whylen)
{
	size_t len = strlen(text);
	(void)why;
	(void)whylen;
	if (strncmp(text, "http://", 7) != 0 || len >= sizeof(url_buf))
		return -1;
	while (len > 7 && text[len - 1] == '/')
		len--;
	memcpy(url_buf, text, len);
	url_buf[len] = '\0';
	*(const char **)out = url_buf;
	return 0;
}

int load_options_parse(load_options_t *opts, int argc, char **argv)
{
	const opt_option_t options[] = {
		{ "url", "URL", OPT_PARSED, &opts->url, .parse = parse_url, .wants = "http://HOST:PORT",
		  .help = "billingd's base URL", .init = "http://127.0.0.1:8080" },
		{ "rate", "N", OPT_NUMBER, &opts->rate, .min = 0, .max = 1e6,
		  .help = "requests per second; 0: as fast as possible", .init = "0" },
		{ "duration", "S", OPT_NUMBER, &opts->duration_s, .min = 0.1, .max = 86400,
		  .help = "seconds to keep starting requests", .init = "10" },
		{ "concurrency", "N", OPT_UINT, &opts->concurrency, .imin = 1, .imax = 1000,
		  .help = "connections, each with one request in flight", .init = "8" },
		{ "invalid-rate", "R", OPT_NUMBER, &opts->invalid_rate, .min = 0, .max = 1,
		  .help = "fraction of flows that send one bad request", .init = "0.05" },
		{ "refund-rate", "R", OPT_NUMBER, &opts->refund_rate, .min = 0, .max = 1,
		  .help = "fraction of approved payments refunded", .init = "0.3" },
		{ "seed", "N", OPT_U64, &opts->seed, .imin = 0, .imax = UINT64_MAX,
		  .help = "random seed of the request mix", .init = "1" },
		{ "json", NULL, OPT_FLAG, &opts->json, .help = "print the summary as one JSON object" },
	};

	const opt_table_t table = { .prog = "billing-load", .usage = "[options]", .options = options, .n = sizeof(options) / sizeof(options[0]) };

	memset(opts, 0, sizeof(*opts));
	return opt_parse(&table, argc, argv);
}
