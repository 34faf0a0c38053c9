/*
 * options.c -- billing-load's command line, strictly (examples/common/cli.h).
 */
#include "options.h"

#include <stdint.h>
#include <string.h>

#include "cli.h"

enum { URL,
       RATE,
       DURATION,
       CONCURRENCY,
       INVALID_RATE,
       REFUND_RATE,
       SEED,
       JSON,
       N_OPTIONS };

static const cli_option_t options[N_OPTIONS] = {
	[URL] = { "url", "URL", "billingd's base URL", "http://127.0.0.1:8080" },
	[RATE] = { "rate", "N", "requests per second; 0: as fast as possible", "0" },
	[DURATION] = { "duration", "S", "seconds to keep starting requests", "10" },
	[CONCURRENCY] = { "concurrency", "N", "connections, each with one request in flight", "8" },
	[INVALID_RATE] = { "invalid-rate", "R", "fraction of flows that send one bad request", "0.05" },
	[REFUND_RATE] = { "refund-rate", "R", "fraction of approved payments refunded", "0.3" },
	[SEED] = { "seed", "N", "random seed of the request mix", "1" },
	[JSON] = { "json", NULL, "print the summary as one JSON object", NULL },
};

static char url_buf[256];

/* http://HOST:PORT; paths are appended to it, so trailing slashes go. */
static int take_url(const cli_t *cli, size_t i, const char *text, const char **out)
{
	size_t len = text != NULL ? strlen(text) : 0;
	if (text == NULL || strncmp(text, "http://", 7) != 0 || len >= sizeof(url_buf))
		return cli_wrong(cli, i, "http://HOST:PORT", text);
	while (len > 7 && text[len - 1] == '/')
		len--;
	memcpy(url_buf, text, len);
	url_buf[len] = '\0';
	*out = url_buf;
	return 0;
}

static int take(void *ctx, const cli_t *cli, size_t i, const char *text)
{
	load_options_t *opts = ctx;
	switch (i) {
	case URL:
		return take_url(cli, i, text, &opts->url);
	case RATE:
		return cli_number(cli, i, text, 0, 1e6, &opts->rate);
	case DURATION:
		return cli_number(cli, i, text, 0.1, 86400, &opts->duration_s);
	case CONCURRENCY:
		return cli_uint32(cli, i, text, 1, 1000, &opts->concurrency);
	case INVALID_RATE:
		return cli_number(cli, i, text, 0, 1, &opts->invalid_rate);
	case REFUND_RATE:
		return cli_number(cli, i, text, 0, 1, &opts->refund_rate);
	case SEED:
		return cli_uint64(cli, i, text, &opts->seed);
	case JSON:
		opts->json = 1;
		return 0;
	}
	return -1;
}

int load_options_parse(load_options_t *opts, int argc, char **argv)
{
	const cli_t cli = { "billing-load", options, N_OPTIONS };

	memset(opts, 0, sizeof(*opts));
	return cli_parse(&cli, take, opts, argc, argv);
}
