/*
 * exemplar_exposition.c -- format.c's OpenMetrics (format_protobuf.c's
 * protobuf with --protobuf) with exemplars, without a service:
 * billing_requests_total{handler, status="0"} and
 * billing_request_duration_seconds of the requests given as
 * HANDLER:SECONDS:REQUEST_ID, each counted in its bucket, and a source
 * that answers the latest request of a (handler, bucket), and a handler's
 * latest request for its counter.  With --any-bucket the source answers a
 * handler's latest request for every bucket, so the writer's own check is
 * what keeps it off the others.
 *
 *   exemplar_exposition [--protobuf] [--any-bucket] HANDLER:SECONDS:REQUEST_ID...
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "metric_table.h"

#define MAX_REQUESTS 64

typedef struct request {
	char handler[64];
	double seconds;
	bx_u64 id;
} request_t;

typedef struct given {
	request_t req[MAX_REQUESTS];
	size_t n;
	int any_bucket;
} given_t;

static int latest(void *ctx, const bx_sample_t *bucket, double lower, double upper, bx_exemplar_t *out)
{
	const given_t *g = ctx;
	const char *handler = bucket->label_values[0];
	for (size_t i = g->n; i-- > 0;) {
		const request_t *r = &g->req[i];
		if (strcmp(r->handler, handler) != 0)
			continue;
		if (!g->any_bucket && !(r->seconds > lower && r->seconds <= upper))
			continue;
		out->request_id = r->id;
		out->value = r->seconds;
		out->timestamp = (double)time(NULL);
		return 1;
	}
	return 0;
}

static const bx_metric_t *duration_family(void)
{
	for (size_t i = 0; i < bx_metric_count; i++)
		if (bx_metrics[i].source == BX_SRC_HIST &&
		    strcmp(bx_quantities[bx_maps[bx_metrics[i].map].quantities[bx_metrics[i].quantity].quantity].arg,
		           "duration_ns") == 0)
			return &bx_metrics[i];
	return NULL;
}

static const bx_metric_t *family(const char *name)
{
	for (size_t i = 0; i < bx_metric_count; i++)
		if (strcmp(bx_metrics[i].name, name) == 0)
			return &bx_metrics[i];
	return NULL;
}

static int add_counter(bx_snapshot_t *s, const bx_metric_t *m, const given_t *g, const char *handler)
{
	double n = 0;
	for (size_t i = 0; i < g->n; i++)
		n += strcmp(g->req[i].handler, handler) == 0;
	bx_sample_t *x = bx_snapshot_add(s, m, "", n);
	return !x || bx_sample_label(x, "handler", handler) || bx_sample_label(x, "status", "0") ? -1 : 0;
}

static int add_series(bx_snapshot_t *s, const bx_metric_t *m, const given_t *g, const char *handler)
{
	const bx_quantity_t *q = &bx_quantities[bx_maps[m->map].quantities[m->quantity].quantity];
	double count = 0, sum = 0;
	for (size_t b = 0; b <= q->nbounds; b++) {
		const char *le = b < q->nbounds ? q->le[b] : "+Inf";
		double upper = b < q->nbounds ? strtod(le, NULL) : 1e300;
		double in = 0;
		for (size_t i = 0; i < g->n; i++)
			if (strcmp(g->req[i].handler, handler) == 0 && g->req[i].seconds <= upper)
				in++;
		bx_sample_t *x = bx_snapshot_add(s, m, "_bucket", in);
		if (!x || bx_sample_label(x, "handler", handler) || bx_sample_label(x, "le", le))
			return -1;
		count = in;
	}
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->req[i].handler, handler) == 0)
			sum += g->req[i].seconds;
	bx_sample_t *x = bx_snapshot_add(s, m, "_sum", sum);
	if (!x || bx_sample_label(x, "handler", handler))
		return -1;
	x = bx_snapshot_add(s, m, "_count", count);
	return !x || bx_sample_label(x, "handler", handler) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static given_t g;
	int a = 1, protobuf = 0;
	for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
		if (strcmp(argv[a], "--any-bucket") == 0) {
			g.any_bucket = 1;
		} else if (strcmp(argv[a], "--protobuf") == 0) {
			protobuf = 1;
		} else {
			fprintf(stderr, "exemplar_exposition: unknown option '%s'\n", argv[a]);
			return 2;
		}
	}
	for (; a < argc && g.n < MAX_REQUESTS; a++) {
		request_t *r = &g.req[g.n++];
		if (sscanf(argv[a], "%63[^:]:%lf:%" SCNu64, r->handler, &r->seconds, &r->id) != 3) {
			fprintf(stderr, "exemplar_exposition: expected HANDLER:SECONDS:REQUEST_ID, got '%s'\n", argv[a]);
			return 2;
		}
	}
	const bx_metric_t *m = duration_family(), *requests = family("billing_requests_total");
	if (!m || !requests) {
		fprintf(stderr, "exemplar_exposition: no duration histogram or request counter in the metric table\n");
		return 1;
	}
	bx_snapshot_t s = { 0 };
	for (int pass = 0; pass < 2; pass++) { /* counters, then histograms: one family each */
		for (size_t i = 0; i < g.n; i++) {
			int seen = 0;
			for (size_t j = 0; j < i; j++)
				seen |= strcmp(g.req[j].handler, g.req[i].handler) == 0;
			if (seen)
				continue;
			if (pass ? add_series(&s, m, &g, g.req[i].handler) : add_counter(&s, requests, &g, g.req[i].handler)) {
				fprintf(stderr, "exemplar_exposition: out of memory\n");
				return 1;
			}
		}
	}
	bx_exemplar_source_t src = { latest, &g };
	pr_buf_t out = { 0 };
	if (protobuf)
		bx_format_protobuf(&s, &src, &out);
	else
		bx_format_openmetrics(&s, &src, &out);
	if (out.failed) {
		fprintf(stderr, "exemplar_exposition: out of memory\n");
		return 1;
	}
	fwrite(out.data, 1, out.len, stdout);
	free(out.data);
	bx_snapshot_free(&s);
	return 0;
}
