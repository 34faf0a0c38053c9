/*
 * stats.h -- what billing-load counts: latencies and the outcome of every
 * response, exactly.
 */
#ifndef BILLING_LOAD_STATS_H
#define BILLING_LOAD_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define STATS_MAX_REJECTION_KINDS 64

typedef struct rejection_kind {
	unsigned int status;
	char code[40];
	uint64_t count;
} rejection_kind_t;

typedef struct stats {
	uint64_t requests_sent;
	uint64_t responses; /* complete HTTP responses of any status */
	uint64_t invoices_created;
	uint64_t payments_approved;
	uint64_t payments_declined;
	uint64_t refunds;
	uint64_t invoice_reads;
	uint64_t health_checks;
	uint64_t server_errors;                                 /* 5xx */
	uint64_t transport_errors;                              /* no response: refused, reset, timed out */
	uint64_t unexpected;                                    /* a response other than the one the scenario expects */
	rejection_kind_t rejections[STATS_MAX_REJECTION_KINDS]; /* 4xx by status and code */
	size_t rejection_kinds;
	double *latency_ms;
	size_t latency_len, latency_cap;
	double elapsed_s;
} stats_t;

void stats_add_latency(stats_t *s, double ms);
void stats_add_rejection(stats_t *s, unsigned int status, const char *code);
uint64_t stats_rejections_total(const stats_t *s);
void stats_print(stats_t *s, FILE *out, double rate, unsigned int concurrency);
void stats_print_json(stats_t *s, FILE *out);
void stats_free(stats_t *s);

#endif /* BILLING_LOAD_STATS_H */
