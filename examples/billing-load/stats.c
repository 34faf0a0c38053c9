/*
 * stats.c -- percentiles (nearest rank over every sample: no sketch, the
 * runs are small) and the outcome table.
 */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

void stats_add_latency(stats_t *s, double ms)
{
	if (s->latency_len == s->latency_cap) {
		size_t cap = s->latency_cap ? s->latency_cap * 2 : 4096;
		double *grown = realloc(s->latency_ms, cap * sizeof(*grown));
		if (grown == NULL)
			return; /* keep counting outcomes; percentiles lose a sample */
		s->latency_ms = grown;
		s->latency_cap = cap;
	}
	s->latency_ms[s->latency_len++] = ms;
}

void stats_add_rejection(stats_t *s, unsigned int status, const char *code)
{
	size_t i;
	for (i = 0; i < s->rejection_kinds; i++) {
		if (s->rejections[i].status == status && strcmp(s->rejections[i].code, code) == 0) {
			s->rejections[i].count++;
			return;
		}
	}
	if (s->rejection_kinds == STATS_MAX_REJECTION_KINDS) {
		i = STATS_MAX_REJECTION_KINDS - 1; /* lump the rest together */
		code = "other";
	} else {
		i = s->rejection_kinds++;
	}
	s->rejections[i].status = status;
	snprintf(s->rejections[i].code, sizeof(s->rejections[i].code), "%s", code);
	s->rejections[i].count++;
}

uint64_t stats_rejections_total(const stats_t *s)
{
	uint64_t n = 0;
	size_t i;
	for (i = 0; i < s->rejection_kinds; i++)
		n += s->rejections[i].count;
	return n;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double percentile(const stats_t *s, double p)
{
	size_t rank;
	if (s->latency_len == 0)
		return 0.0;
	rank = (size_t)(p / 100.0 * (double)s->latency_len + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > s->latency_len)
		rank = s->latency_len;
	return s->latency_ms[rank - 1];
}

static void sort_latencies(stats_t *s)
{
	qsort(s->latency_ms, s->latency_len, sizeof(double), compare_double);
}

void stats_print(stats_t *s, FILE *out, double rate, unsigned int concurrency)
{
	size_t i;
	double secs = s->elapsed_s > 0 ? s->elapsed_s : 1e-9;
	char target[32];
	sort_latencies(s);
	if (rate > 0)
		snprintf(target, sizeof(target), "%.0f/s", rate);
	else
		snprintf(target, sizeof(target), "as fast as possible");
	fprintf(out, "billing-load: %.2f s, %u connections, rate %s\n", s->elapsed_s, concurrency,
	        target);
	fprintf(out, "  throughput         %.1f responses/s (%llu sent, %llu answered)\n",
	        (double)s->responses / secs, (unsigned long long)s->requests_sent,
	        (unsigned long long)s->responses);
	fprintf(out, "  latency ms         p50 %.3f  p95 %.3f  p99 %.3f  max %.3f\n",
	        percentile(s, 50), percentile(s, 95), percentile(s, 99), percentile(s, 100));
	fprintf(out, "  invoices created   %llu\n", (unsigned long long)s->invoices_created);
	fprintf(out, "  payments approved  %llu\n", (unsigned long long)s->payments_approved);
	fprintf(out, "  payments declined  %llu\n", (unsigned long long)s->payments_declined);
	fprintf(out, "  refunds            %llu\n", (unsigned long long)s->refunds);
	fprintf(out, "  invoice reads      %llu\n", (unsigned long long)s->invoice_reads);
	fprintf(out, "  4xx                %llu\n", (unsigned long long)stats_rejections_total(s));
	for (i = 0; i < s->rejection_kinds; i++)
		fprintf(out, "    %u %-28s %llu\n", s->rejections[i].status, s->rejections[i].code,
		        (unsigned long long)s->rejections[i].count);
	fprintf(out, "  5xx                %llu\n", (unsigned long long)s->server_errors);
	fprintf(out, "  transport errors   %llu\n", (unsigned long long)s->transport_errors);
	fprintf(out, "  unexpected         %llu\n", (unsigned long long)s->unexpected);
}

void stats_print_json(stats_t *s, FILE *out)
{
	size_t i;
	double secs = s->elapsed_s > 0 ? s->elapsed_s : 1e-9;
	sort_latencies(s);
	fprintf(out, "{\"elapsed_s\":%.3f,\"requests_sent\":%llu,\"responses\":%llu,"
	             "\"throughput_rps\":%.1f,",
	        s->elapsed_s, (unsigned long long)s->requests_sent,
	        (unsigned long long)s->responses, (double)s->responses / secs);
	fprintf(out, "\"latency_ms\":{\"p50\":%.3f,\"p95\":%.3f,\"p99\":%.3f,\"max\":%.3f},",
	        percentile(s, 50), percentile(s, 95), percentile(s, 99), percentile(s, 100));
	fprintf(out, "\"invoices_created\":%llu,\"payments_approved\":%llu,"
	             "\"payments_declined\":%llu,\"refunds\":%llu,\"invoice_reads\":%llu,"
	             "\"health_checks\":%llu,\"client_errors\":%llu,\"server_errors\":%llu,"
	             "\"transport_errors\":%llu,\"unexpected\":%llu,\"rejections\":{",
	        (unsigned long long)s->invoices_created, (unsigned long long)s->payments_approved,
	        (unsigned long long)s->payments_declined, (unsigned long long)s->refunds,
	        (unsigned long long)s->invoice_reads, (unsigned long long)s->health_checks,
	        (unsigned long long)stats_rejections_total(s),
	        (unsigned long long)s->server_errors, (unsigned long long)s->transport_errors,
	        (unsigned long long)s->unexpected);
	for (i = 0; i < s->rejection_kinds; i++)
		fprintf(out, "%s\"%u %s\":%llu", i ? "," : "", s->rejections[i].status,
		        s->rejections[i].code, (unsigned long long)s->rejections[i].count);
	fprintf(out, "}}\n");
}

void stats_free(stats_t *s)
{
	free(s->latency_ms);
	s->latency_ms = NULL;
	s->latency_len = s->latency_cap = 0;
}
