/*
 * format_protobuf.c -- a snapshot in Prometheus's protobuf exposition:
 * length-delimited io.prometheus.client.MetricFamily messages
 * (proto/metrics.proto), what a Prometheus started with
 * --enable-feature=native-histograms asks for.
 *
 * A histogram whose series carry native buckets is sent twice under its
 * name: once with the native buckets only, then with the classic ones
 * only.  Prometheus 2.42 ingests a histogram that has native buckets as a
 * native series alone and drops its classic buckets; sent apart, it keeps
 * both, so the rules and dashboards over _bucket keep working beside
 * histogram_quantile() over the native series (docs/exporter.md).
 *
 * Exemplars go where each Prometheus reads them: on the classic buckets
 * (Bucket.exemplar, the one place 2.42 reads a histogram's), on counters
 * (Counter.exemplar), and every bucket's again on the native series
 * (Histogram.exemplars, read by 2.51 and later), so a Prometheus with
 * native histograms keeps the requests OpenMetrics would have shown it.
 */
#include "format.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.pb-c.h"

typedef Io__Prometheus__Client__MetricFamily family_t;
typedef Io__Prometheus__Client__Metric metric_t;
typedef Io__Prometheus__Client__Histogram histogram_t;
typedef Io__Prometheus__Client__Exemplar exemplar_t;

/* An exemplar's message, its one label and its time. */
typedef struct exemplar_msg {
	exemplar_t ex;
	Io__Prometheus__Client__LabelPair label, *label_ptr;
	Io__Prometheus__Client__Timestamp at;
	char request_id[24];
} exemplar_msg_t;

/* The unit a family's arrays are laid out in: aligned for any of them. */
typedef union unit {
	long double d;
	void *p;
	long long l;
} unit_t;

/* One family's messages, built in arrays sized to its samples. */
typedef struct build {
	metric_t *metrics, **metric_ptrs;
	Io__Prometheus__Client__LabelPair *pairs, **pair_ptrs;
	Io__Prometheus__Client__Counter *counters;
	Io__Prometheus__Client__Gauge *gauges;
	histogram_t *hists;
	Io__Prometheus__Client__Bucket *buckets, **bucket_ptrs;
	Io__Prometheus__Client__BucketSpan *spans, **span_ptrs;
	int64_t *deltas;
	exemplar_msg_t *exemplars; /* one a sample at most */
	exemplar_t **exemplar_ptrs;
	size_t nmetrics, npairs, nbuckets, nspans, ndeltas, nexemplars;
} build_t;

static void put_varint(pr_buf_t *b, uint64_t v)
{
	unsigned char out[10];
	size_t n = 0;
	do {
		out[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		out[n++] |= v ? 0x80 : 0;
	} while (v);
	pr_buf_append(b, (const char *)out, n);
}

/* The family as one length-delimited message. */
static void put_family(pr_buf_t *b, const family_t *f)
{
	size_t n = io__prometheus__client__metric_family__get_packed_size(f);
	uint8_t *packed = malloc(n ? n : 1);
	if (!packed) {
		b->failed = 1; /* a family left out: the scrape is refused, not served short */
		return;
	}
	io__prometheus__client__metric_family__pack(f, packed);
	put_varint(b, n);
	pr_buf_append(b, (const char *)packed, n);
	free(packed);
}

/* The series' labels (le left out: a classic bucket's bound is its own field). */
static void set_labels(build_t *w, metric_t *m, const bx_sample_t *x)
{
	m->label = &w->pair_ptrs[w->npairs];
	for (size_t i = 0; i < x->nlabels; i++) {
		if (strcmp(x->label_names[i], "le") == 0)
			continue;
		Io__Prometheus__Client__LabelPair *p = &w->pairs[w->npairs];
		io__prometheus__client__label_pair__init(p);
		p->name = (char *)x->label_names[i];
		p->value = (char *)x->label_values[i];
		w->pair_ptrs[w->npairs++] = p;
		m->n_label++;
	}
}

/* The exemplar of sample x (prev: the sample before it), or NULL.  Its
 * time to the millisecond, as the text form writes it, so that a request
 * is stored at one time whichever form Prometheus asked for. */
static exemplar_t *new_exemplar(build_t *w, const bx_exemplar_source_t *src, const bx_sample_t *prev,
                                const bx_sample_t *x)
{
	bx_exemplar_t e;
	if (!bx_exemplar_of(src, prev, x, &e))
		return NULL;
	exemplar_msg_t *m = &w->exemplars[w->nexemplars];
	io__prometheus__client__exemplar__init(&m->ex);
	io__prometheus__client__label_pair__init(&m->label);
	io__prometheus__client__timestamp__init(&m->at);
	snprintf(m->request_id, sizeof m->request_id, "%" PRIu64, (uint64_t)e.request_id);
	m->label.name = (char *)"request_id";
	m->label.value = m->request_id;
	m->label_ptr = &m->label;
	m->ex.label = &m->label_ptr;
	m->ex.n_label = 1;
	m->ex.has_value = 1;
	m->ex.value = e.value;
	int64_t ms = (int64_t)(e.timestamp * 1000.0 + 0.5); /* > 0 and bounded: bx_exemplar_of */
	m->at.has_seconds = m->at.has_nanos = 1;
	m->at.seconds = ms / 1000;
	m->at.nanos = (int32_t)(ms % 1000) * 1000000;
	m->ex.timestamp = &m->at;
	w->exemplar_ptrs[w->nexemplars] = &m->ex;
	return w->exemplar_ptrs[w->nexemplars++];
}

static metric_t *new_metric(build_t *w, const bx_sample_t *x)
{
	metric_t *m = &w->metrics[w->nmetrics];
	io__prometheus__client__metric__init(m);
	w->metric_ptrs[w->nmetrics++] = m;
	set_labels(w, m, x);
	return m;
}

/* The native buckets as spans of consecutive non-empty buckets and their
 * counts as deltas; the count is the zero bucket's and the buckets'. */
static void set_native(build_t *w, histogram_t *h, const bx_native_t *n)
{
	uint64_t count = n->cells[0], prev = 0;
	long last = 0; /* the index after the last span's end (no span yet: first) */
	int first = 1;
	h->has_schema = h->has_zero_threshold = h->has_zero_count = 1;
	h->schema = n->schema;
	h->zero_threshold = n->zero_threshold;
	h->zero_count = n->cells[0];
	h->positive_span = &w->span_ptrs[w->nspans];
	h->positive_delta = &w->deltas[w->ndeltas];
	for (size_t k = 1; k <= n->nbuckets; k++) {
		uint64_t c = n->cells[k];
		if (!c)
			continue;
		long index = (long)n->first_index + (long)k - 1;
		if (first || index != last) {
			Io__Prometheus__Client__BucketSpan *s = &w->spans[w->nspans];
			io__prometheus__client__bucket_span__init(s);
			s->has_offset = s->has_length = 1;
			s->offset = (int32_t)(first ? index : index - last);
			first = 0;
			w->span_ptrs[w->nspans++] = s;
			h->n_positive_span++;
		}
		h->positive_span[h->n_positive_span - 1]->length++;
		w->deltas[w->ndeltas++] = (int64_t)(c - prev);
		h->n_positive_delta++;
		prev = c;
		count += c;
		last = index + 1;
	}
	h->has_sample_count = 1;
	h->sample_count = count;
}

/* Samples [first, end) of one family: its messages, native ones (when
 * native) or classic ones, with src's exemplars. */
static void family(pr_buf_t *b, const bx_sample_t *s, size_t first, size_t end, int native,
                   const bx_exemplar_source_t *src)
{
	const bx_metric_t *m = s[first].metric;
	size_t n = end - first, nnative = 0;
	build_t w;
	family_t f;

	for (size_t i = first; i < end; i++)
		if (s[i].native)
			nnative += s[i].native->nbuckets;
	memset(&w, 0, sizeof w);
	/* Every array in one zeroed block: the first pass measures it, the
	 * second places each array at its offset, in whole units. */
	unit_t *block = NULL;
	for (int pass = 0; pass < 2; pass++) {
		size_t at = 0, ne = src ? n : 0, ns = nnative + 1;
#define ARRAY(field, count) \
  (w.field = pass ? (void *)(block + at) : NULL, at += ((count) * sizeof *w.field + sizeof(unit_t) - 1) / sizeof(unit_t))
		ARRAY(metrics, n), ARRAY(metric_ptrs, n), ARRAY(pairs, n * BX_SAMPLE_LABELS);
		ARRAY(pair_ptrs, n * BX_SAMPLE_LABELS), ARRAY(counters, n), ARRAY(gauges, n), ARRAY(hists, n);
		ARRAY(buckets, n), ARRAY(bucket_ptrs, n), ARRAY(spans, ns), ARRAY(span_ptrs, ns), ARRAY(deltas, ns);
		ARRAY(exemplars, ne), ARRAY(exemplar_ptrs, ne);
#undef ARRAY
		if (!pass && !(block = calloc(at, sizeof *block))) {
			b->failed = 1; /* out of memory: the scrape is refused, not served short */
			return;
		}
	}
	io__prometheus__client__metric_family__init(&f);
	f.name = (char *)m->name;
	f.help = (char *)m->help;
	f.has_type = 1;
	f.type = m->type == BX_COUNTER ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER
	         : m->type == BX_GAUGE ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE
	                               : IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM;
	histogram_t *h = NULL;
	size_t series_exemplars = 0; /* where the series' exemplars start in w.exemplar_ptrs */
	for (size_t i = first; i < end; i++) {
		const bx_sample_t *x = &s[i];
		if (m->type != BX_HISTOGRAM) {
			metric_t *mt = new_metric(&w, x);
			if (m->type == BX_COUNTER) {
				io__prometheus__client__counter__init(&w.counters[i - first]);
				w.counters[i - first].has_value = 1;
				w.counters[i - first].value = x->value;
				w.counters[i - first].exemplar = new_exemplar(&w, src, NULL, x);
				mt->counter = &w.counters[i - first];
			} else {
				io__prometheus__client__gauge__init(&w.gauges[i - first]);
				w.gauges[i - first].has_value = 1;
				w.gauges[i - first].value = x->value;
				mt->gauge = &w.gauges[i - first];
			}
			continue;
		}
		if (!h) { /* a series starts: its buckets, then _sum, then _count */
			metric_t *mt = new_metric(&w, x);
			h = &w.hists[w.nmetrics - 1];
			io__prometheus__client__histogram__init(h);
			h->bucket = &w.bucket_ptrs[w.nbuckets];
			mt->histogram = h;
			series_exemplars = w.nexemplars;
		}
		if (strcmp(x->suffix, "_bucket") == 0 && native) {
			new_exemplar(&w, src, i > first ? x - 1 : NULL, x); /* gathered for the native series */
		} else if (strcmp(x->suffix, "_bucket") == 0) {
			Io__Prometheus__Client__Bucket *bk = &w.buckets[w.nbuckets];
			const char *le = bx_sample_label_value(x, "le");
			io__prometheus__client__bucket__init(bk);
			bk->has_cumulative_count = bk->has_upper_bound = 1;
			bk->cumulative_count = (uint64_t)x->value;
			bk->upper_bound = le && strcmp(le, "+Inf") != 0 ? strtod(le, NULL) : INFINITY;
			bk->exemplar = new_exemplar(&w, src, i > first ? x - 1 : NULL, x);
			w.bucket_ptrs[w.nbuckets++] = bk;
			h->n_bucket++;
		} else if (strcmp(x->suffix, "_sum") == 0) {
			h->has_sample_sum = 1;
			h->sample_sum = x->value;
		} else if (strcmp(x->suffix, "_count") == 0) {
			if (native && x->native) {
				set_native(&w, h, x->native);
				h->exemplars = w.nexemplars > series_exemplars ? &w.exemplar_ptrs[series_exemplars] : NULL;
				h->n_exemplars = w.nexemplars - series_exemplars;
			} else if (native) { /* no native buckets: not in this family */
				w.nmetrics--;
				w.npairs -= w.metrics[w.nmetrics].n_label;
				w.nexemplars = series_exemplars;
			} else {
				h->has_sample_count = 1;
				h->sample_count = (uint64_t)x->value;
			}
			h = NULL;
		}
	}
	f.metric = w.metric_ptrs;
	f.n_metric = w.nmetrics;
	if (f.n_metric)
		put_family(b, &f);
	free(block);
}

void bx_format_protobuf(const bx_snapshot_t *s, const bx_exemplar_source_t *src, pr_buf_t *b)
{
	for (size_t i = 0; i < s->count;) {
		size_t end = i + 1, natives = 0;
		while (end < s->count && s->samples[end].metric == s->samples[i].metric)
			end++;
		for (size_t k = i; k < end; k++)
			natives += s->samples[k].native != NULL;
		if (natives)
			family(b, s->samples, i, end, 1, src);
		family(b, s->samples, i, end, 0, src);
		i = end;
	}
}
