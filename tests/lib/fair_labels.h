/*
 * fair_labels.h -- the fires of the fair-labels tests, one copy for both
 * metric paths: tests/exporter/fair_labels.c (USDT, the exporter's BPF
 * maps) and tests/stats/stats_workload.c "fair" (the stats segment).  The
 * tests (tests/exporter/test_fair_labels.py, tests/stats/test_writer.py)
 * expect the figures of fair_real[] below.
 *
 * Junk currencies are "j" and five digits: never an ISO 4217 code, and
 * short enough (7 bytes) that no two are cut into one.
 */
#ifndef FAIR_LABELS_H
#define FAIR_LABELS_H

#include <stdio.h>
#include <string.h>

#include "billing/probes.h"

/* Fired after the junk, per currency: counts and per-fire amounts. */
static const struct fair_real {
	const char *currency;
	long invoices, invoice_amount;
	long approved, approved_amount, declined, declined_amount;
	long refunds, refund_amount;
} fair_real[] = {
	{ "USD", 3, 1000, 4, 500, 1, 700, 2, 250 },
	{ "GBP", 1, 4000, 2, 300, 0, 0, 1, 100 },
	{ "CHF", 1, 5000, 0, 0, 1, 900, 1, 50 },
};

/* The codes fired late (fire_late_known) or with the real ones only. */
static int fair_is_late(const char *code)
{
	for (size_t i = 0; i < sizeof fair_real / sizeof fair_real[0]; i++)
		if (strcmp(code, fair_real[i].currency) == 0)
			return 1;
	return 0;
}

/* One invoice (amount 100) per code of the file at path but the late ones;
 * how many, or -1 when the file cannot be read. */
static long fire_codes(const char *path)
{
	char line[256]; /* longer than any line of the file: a line is read whole */
	long n = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "#\r\n \t")] = '\0';
		if (!line[0] || fair_is_late(line))
			continue;
		BILLING_INVOICE_CREATE((unsigned long long)n, 7, 100, line);
		n++;
	}
	fclose(f);
	return n;
}

/* Known codes seen only after many others: GBP 2000 twice, CHF 3000 once. */
static void fire_late_known(void)
{
	BILLING_INVOICE_CREATE(1, 7, 2000, "GBP");
	BILLING_INVOICE_CREATE(2, 7, 2000, "GBP");
	BILLING_INVOICE_CREATE(3, 7, 3000, "CHF");
}

/* n distinct junk currencies, each once per probe, amount 1. */
static void fire_junk(long n)
{
	char c[16];
	for (long i = 0; i < n; i++) {
		snprintf(c, sizeof c, "j%05ld", i % 100000);
		BILLING_INVOICE_CREATE((unsigned long long)i, 7, 1, c);
		BILLING_PAYMENT_AUTH((unsigned long long)i, 1, c, "gw-fair", 0, 1000);
		BILLING_REFUND_PROCESS((unsigned long long)i, (unsigned long long)i, 1, c, "fair");
	}
}

static void fire_real(void)
{
	for (size_t i = 0; i < sizeof fair_real / sizeof fair_real[0]; i++) {
		const struct fair_real *r = &fair_real[i];
		for (long k = 0; k < r->invoices; k++)
			BILLING_INVOICE_CREATE(1, 7, r->invoice_amount, r->currency);
		for (long k = 0; k < r->approved; k++)
			BILLING_PAYMENT_AUTH(1, r->approved_amount, r->currency, "gw-fair", 0, 1000);
		for (long k = 0; k < r->declined; k++)
			BILLING_PAYMENT_AUTH(1, r->declined_amount, r->currency, "gw-fair", 51, 1000);
		for (long k = 0; k < r->refunds; k++)
			BILLING_REFUND_PROCESS(1, 1, r->refund_amount, r->currency, "fair");
	}
}

#endif /* FAIR_LABELS_H */
