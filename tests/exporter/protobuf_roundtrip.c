/*
 * protobuf_roundtrip.c -- format_protobuf.c's messages read back with
 * protobuf-c: a counter and two histogram series, one with native buckets
 * (the zero bucket, a gap, a bucket at a negative index, one past a gap of
 * several) and one without.  Each message is a length-delimited
 * MetricFamily; the histogram with native buckets comes twice, native only
 * then classic only; the spans and deltas give back every bucket's count,
 * and the native count is the zero bucket's plus the buckets'.
 *
 * Exemplars from a source that offers one for every bucket and the
 * counter: each classic bucket carries the one whose value lies in it
 * (request_id in full, value, time to the millisecond), a bucket offered
 * a value outside it carries none, the counter carries its own, and the
 * native series carries its buckets' exemplars again, each with its time;
 * without a source (bx_format) nothing carries one.  Prints "ok ..." /
 * "FAIL ..." lines; exit 1 on a failure.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "metric_table.h"
#include "metrics.pb-c.h"

static int failed;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	failed |= !ok;
}

/* What the source offers: per handler, one value per classic bucket (le
 * 0.1, 1, +Inf) - the second outside its bucket - and one for the counter. */
#define WHEN 1795000000.1234 /* seconds: written as ...000.123 */
static const bx_exemplar_t offered[2][3] = {
	{ { 0xffffffffffffffffull - 4, 0.05, WHEN }, { 7, 5.0, WHEN }, { (1ull << 40) + 3, 3.5, WHEN + 1 } },
	{ { (1ull << 32) + 9, 0.02, WHEN }, { (1ull << 33) + 1, 0.5, WHEN + 2 }, { 11, 1.7, WHEN } },
};
static const bx_exemplar_t counted = { (1ull << 32) + 42, 0.25, WHEN + 3 };

static const char *label(const bx_sample_t *x, const char *name)
{
	for (size_t i = 0; i < x->nlabels; i++)
		if (strcmp(x->label_names[i], name) == 0)
			return x->label_values[i];
	return "";
}

static int offer(void *ctx, const bx_sample_t *x, double lower, double upper, bx_exemplar_t *out)
{
	(void)ctx;
	(void)lower;
	if (x->metric->type == BX_COUNTER) {
		*out = counted;
		return 1;
	}
	int row = strcmp(label(x, "handler"), "with") != 0;
	*out = offered[row][upper <= 0.1 ? 0 : upper <= 1 ? 1
	                                                  : 2];
	return 1;
}

/* An exemplar as the source offered it: its one label, value, time (ms). */
static int same(const Io__Prometheus__Client__Exemplar *e, const bx_exemplar_t *want)
{
	char id[24];
	snprintf(id, sizeof id, "%" PRIu64, (uint64_t)want->request_id);
	double ms = floor(want->timestamp * 1000 + 0.5);
	return e && e->n_label == 1 && strcmp(e->label[0]->name, "request_id") == 0 &&
	       strcmp(e->label[0]->value, id) == 0 && e->value == want->value && e->timestamp &&
	       e->timestamp->seconds == (int64_t)(ms / 1000) &&
	       e->timestamp->nanos == (int32_t)(ms - 1000.0 * (double)e->timestamp->seconds) * 1000000;
}

static const bx_metric_t *metric(const char *name)
{
	for (size_t i = 0; i < bx_metric_count; i++)
		if (strcmp(bx_metrics[i].name, name) == 0)
			return &bx_metrics[i];
	fprintf(stderr, "protobuf_roundtrip: no metric %s\n", name);
	exit(2);
}

static void series(bx_snapshot_t *s, const bx_metric_t *m, const char *handler, const bx_native_t *native)
{
	static const char *const le[] = { "0.1", "1", "+Inf" };
	for (int b = 0; b < 3; b++) {
		bx_sample_t *x = bx_snapshot_add(s, m, "_bucket", 10.0 * (b + 1));
		bx_sample_label(x, "handler", handler);
		bx_sample_label(x, "le", le[b]);
	}
	bx_sample_label(bx_snapshot_add(s, m, "_sum", 12.5), "handler", handler);
	bx_sample_t *x = bx_snapshot_add(s, m, "_count", 30);
	bx_sample_label(x, "handler", handler);
	x->native = native;
}

/* The length-delimited messages of b, up to 8; 0 when one does not decode. */
static size_t decode(const pr_buf_t *b, Io__Prometheus__Client__MetricFamily **f)
{
	size_t n = 0, at = 0;
	while (at < b->len && n < 8) {
		uint64_t len = 0;
		unsigned shift = 0;
		unsigned char c;
		do {
			c = (unsigned char)b->data[at++];
			len |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
		} while (c & 0x80 && at < b->len);
		if (len > b->len - at)
			return 0;
		f[n] = io__prometheus__client__metric_family__unpack(NULL, len, (const uint8_t *)b->data + at);
		check(f[n] != NULL, "a length-delimited MetricFamily decodes");
		if (!f[n])
			return 0;
		at += len;
		n++;
	}
	check(at == b->len, "the messages fill the exposition");
	return n;
}

/* No message of the exposition in b carries an exemplar. */
static int no_exemplar(const pr_buf_t *b)
{
	Io__Prometheus__Client__MetricFamily *f[8];
	size_t n = decode(b, f), found = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t m = 0; m < f[i]->n_metric; m++) {
			const Io__Prometheus__Client__Metric *mt = f[i]->metric[m];
			found += mt->counter && mt->counter->exemplar;
			found += mt->histogram ? mt->histogram->n_exemplars : 0;
			for (size_t k = 0; mt->histogram && k < mt->histogram->n_bucket; k++)
				found += mt->histogram->bucket[k]->exemplar != NULL;
		}
		io__prometheus__client__metric_family__free_unpacked(f[i], NULL);
	}
	return n == 3 && found == 0;
}

int main(void)
{
	/* client_model indices -1279 (our bucket 1) ..: counts at our buckets 1, 2, 5 and 700 */
	static bx_u64 cells[1730];
	bx_native_t native = { 6, -1279, ldexp(1.0, -20), 1728, cells };
	bx_snapshot_t s;
	pr_buf_t b = { 0 };

	cells[0] = 4;
	cells[1] = 3;
	cells[2] = 5;
	cells[5] = 1;
	cells[700] = 17;
	memset(&s, 0, sizeof s);
	bx_sample_label(bx_snapshot_add(&s, metric("billing_requests_total"), "", 42), "handler", "a");
	series(&s, metric("billing_request_duration_seconds"), "with", &native);
	series(&s, metric("billing_request_duration_seconds"), "without", NULL);
	pr_buf_t plain = { 0 };
	bx_format(&s, BX_FMT_PROTOBUF, 0, &plain);
	check(!plain.failed && no_exemplar(&plain), "without a source: no exemplar anywhere");
	free(plain.data);
	bx_exemplar_source_t src = { offer, NULL };
	bx_format_protobuf(&s, &src, &b);
	check(!b.failed && b.len > 0, "the snapshot encoded");

	Io__Prometheus__Client__MetricFamily *f[8];
	size_t n = decode(&b, f);
	check(n == 3, "three messages: the counter, the native histogram, the classic one");
	if (n != 3)
		return 1;
	check(strcmp(f[0]->name, "billing_requests_total") == 0 &&
	          f[0]->type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER && f[0]->n_metric == 1 &&
	          f[0]->metric[0]->counter && f[0]->metric[0]->counter->value == 42 && f[0]->metric[0]->n_label == 1 &&
	          strcmp(f[0]->metric[0]->label[0]->value, "a") == 0,
	      "the counter: name, type, value, label");
	check(same(f[0]->metric[0]->counter->exemplar, &counted), "the counter's exemplar: its ID in full, value, time");

	Io__Prometheus__Client__MetricFamily *nf = f[1], *cf = f[2];
	check(strcmp(nf->name, "billing_request_duration_seconds") == 0 && nf->n_metric == 1 &&
	          strcmp(nf->metric[0]->label[0]->value, "with") == 0 && nf->metric[0]->n_label == 1,
	      "the native family: only the series with native buckets, its label without le");
	const Io__Prometheus__Client__Histogram *h = nf->metric[0]->histogram;
	check(h && h->n_bucket == 0 && h->schema == 6 && h->zero_threshold == ldexp(1.0, -20) && h->zero_count == 4 &&
	          h->sample_count == 4 + 3 + 5 + 1 + 17 && h->sample_sum == 12.5,
	      "native: no classic buckets; schema, zero threshold and count, count = zero + buckets, sum");
	/* the spans and deltas back into counts by client_model index */
	bx_u64 back[1730] = { 0 };
	long index = 0;
	int64_t count = 0;
	size_t d = 0, bad = 0;
	for (size_t k = 0; h && k < h->n_positive_span; k++) {
		index += h->positive_span[k]->offset;
		for (uint32_t j = 0; j < h->positive_span[k]->length; j++, index++) {
			count += d < h->n_positive_delta ? h->positive_delta[d++] : 0;
			long ours = index + 1279 + 1;
			if (ours < 1 || ours > 1728 || count < 0)
				bad++;
			else
				back[ours] = (bx_u64)count;
		}
	}
	back[0] = cells[0];
	check(h && d == h->n_positive_delta && !bad && memcmp(back, cells, sizeof back) == 0,
	      "spans and deltas give back every bucket's count at its index");
	check(h && h->n_positive_span == 3, "three spans: buckets 1-2, 5, 700");
	check(h && h->n_exemplars == 2 && same(h->exemplars[0], &offered[0][0]) && same(h->exemplars[1], &offered[0][2]),
	      "native: the series' bucket exemplars, the one outside its bucket left out, each with its time");

	check(strcmp(cf->name, "billing_request_duration_seconds") == 0 && cf->n_metric == 2, "the classic family: both series");
	for (size_t i = 0; i < cf->n_metric && i < 2; i++) {
		const Io__Prometheus__Client__Histogram *c = cf->metric[i]->histogram;
		check(c && c->n_bucket == 3 && c->bucket[0]->upper_bound == 0.1 && c->bucket[1]->cumulative_count == 20 &&
		          isinf(c->bucket[2]->upper_bound) && c->sample_count == 30 && c->sample_sum == 12.5 &&
		          c->n_positive_span == 0 && !c->has_schema && !c->has_zero_threshold,
		      "classic: the buckets with their bounds, count and sum, no native field");
		check(c && c->n_exemplars == 0 && c->n_bucket == 3 && same(c->bucket[0]->exemplar, &offered[i][0]) &&
		          same(c->bucket[2]->exemplar, &offered[i][2]),
		      "classic: each bucket's exemplar, its ID in full, value and time (none on the series)");
		check(c && c->n_bucket == 3 && (i == 0 ? c->bucket[1]->exemplar == NULL : same(c->bucket[1]->exemplar, &offered[1][1])),
		      i == 0 ? "classic: a value offered outside its bucket is left out" : "classic: a value in (0.1, 1] on le=1");
	}
	for (size_t i = 0; i < n; i++)
		io__prometheus__client__metric_family__free_unpacked(f[i], NULL);
	free(b.data);
	bx_snapshot_free(&s);
	return failed;
}
