/*
 * options.h -- billing-load's command line.
 */
#ifndef BILLING_LOAD_OPTIONS_H
#define BILLING_LOAD_OPTIONS_H

#include <stdint.h>

typedef struct load_options {
	const char *url;   /* base URL of billingd, no trailing slash */
	double rate;       /* requests per second; 0: as fast as possible */
	double duration_s; /* how long to start new requests */
	uint32_t concurrency;
	double invalid_rate; /* fraction of flows that are one bad request */
	double refund_rate;  /* fraction of approved payments refunded */
	uint64_t seed;
	int json; /* print the summary as JSON */
} load_options_t;

/* 0: run; > 0: --help or the option table printed; -1: bad input, one
 * line printed on stderr. */
int load_options_parse(load_options_t *opts, int argc, char **argv);

#endif /* BILLING_LOAD_OPTIONS_H */
