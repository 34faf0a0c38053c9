/*
 * samples.c -- the snapshot's sample container, and a family's series
 * summed and written into it (samples.h).
 */
#include <stdlib.h>
#include <string.h>

#include "samples.h"

/* Keep p to free with the snapshot: p, or NULL (p freed) when out of memory. */
static void *keep(bx_snapshot_t *s, void *p)
{
	if (p && s->owned_count == s->owned_cap) {
		size_t cap = s->owned_cap ? s->owned_cap * 2 : 32;
		char **o = realloc(s->owned, cap * sizeof *o);
		if (!o) {
			free(p);
			return NULL;
		}
		s->owned = o;
		s->owned_cap = cap;
	}
	if (p)
		s->owned[s->owned_count++] = p;
	return p;
}

char *bx_snapshot_own(bx_snapshot_t *s, const char *text)
{
	return keep(s, strdup(text));
}

void *bx_snapshot_alloc(bx_snapshot_t *s, size_t size)
{
	return keep(s, calloc(1, size ? size : 1));
}

bx_sample_t *bx_snapshot_add(bx_snapshot_t *s, const bx_metric_t *m, const char *suffix, double value)
{
	if (s->count == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		bx_sample_t *n = realloc(s->samples, cap * sizeof *n);
		if (!n)
			return NULL;
		s->samples = n;
		s->cap = cap;
	}
	bx_sample_t *x = &s->samples[s->count++];
	memset(x, 0, sizeof *x);
	x->metric = m;
	x->suffix = suffix;
	x->value = value;
	return x;
}

int bx_sample_label(bx_sample_t *x, const char *name, const char *value)
{
	if (!x || !value || x->nlabels == BX_SAMPLE_LABELS)
		return -1;
	x->label_names[x->nlabels] = name;
	x->label_values[x->nlabels] = value;
	x->nlabels++;
	return 0;
}

const char *bx_sample_label_value(const bx_sample_t *x, const char *name)
{
	for (size_t i = 0; i < x->nlabels; i++)
		if (strcmp(x->label_names[i], name) == 0)
			return x->label_values[i];
	return NULL;
}

static int by_labels(const void *a, const void *b)
{
	const bx_series_t *x = a, *y = b;
	for (size_t i = 0; i < x->n; i++) {
		int c = strcmp(x->values[i], y->values[i]);
		if (c)
			return c;
	}
	return 0;
}

/* A sample of m in s with v's labels; NULL when out of memory. */
static bx_sample_t *add(bx_snapshot_t *s, const bx_metric_t *m, const bx_series_t *v, const char *suffix, double value)
{
	bx_sample_t *x = bx_snapshot_add(s, m, suffix, value);
	for (size_t i = 0; x && i < v->n; i++)
		if (bx_sample_label(x, m->labels[i].name, v->values[i]) != 0)
			return NULL;
	return x;
}

/* A sum cell in the quantity's unit: two's complement when signed. */
static double sum_value(const bx_quantity_t *q, bx_u64 sum)
{
	double v = q->is_signed ? (double)(int64_t)sum : (double)sum;
	return q->divide == 1.0 ? v : v / q->divide;
}

static int write_series(bx_snapshot_t *s, const bx_metric_t *m, const bx_quantity_t *q, const bx_series_t *v,
                        const bx_native_t *native)
{
	const bx_u64 *c = v->cells; /* a count; or count, sum, buckets */
	if (m->source == BX_SRC_COUNT || m->source == BX_SRC_SUM)
		return add(s, m, v, "", m->source == BX_SRC_COUNT ? (double)c[0] : sum_value(q, c[1])) ? 0 : -1;
	double cumulative = 0;
	for (size_t b = 0; b <= q->nbounds; b++) {
		cumulative += (double)c[2 + b];
		bx_sample_t *x = add(s, m, v, "_bucket", cumulative);
		if (!x || bx_sample_label(x, "le", b < q->nbounds ? q->le[b] : "+Inf") != 0)
			return -1;
	}
	bx_sample_t *x = add(s, m, v, "_sum", sum_value(q, c[1]));
	if (x)
		x = add(s, m, v, "_count", (double)c[0]);
	if (x)
		x->native = native;
	return x ? 0 : -1;
}

int bx_snapshot_series(bx_snapshot_t *s, const bx_metric_t *m, const bx_quantity_t *q, bx_series_t *v, size_t n,
                       bx_natives_fn natives)
{
	size_t ncells = m->source == BX_SRC_COUNT ? 1 : q->nbounds + 3;
	int rc = 0;
	if (n > 1)
		qsort(v, n, sizeof *v, by_labels);
	for (size_t i = 0; i < n && rc == 0;) {
		bx_series_t sum = v[i];
		size_t j = i + 1;
		for (; j < n && by_labels(&v[i], &v[j]) == 0; j++)
			for (size_t c = 0; c < ncells; c++)
				sum.cells[c] += v[j].cells[c];
		rc = write_series(s, m, q, &sum, natives && m->source == BX_SRC_HIST ? natives(s, m, &v[i], j - i) : NULL);
		i = j;
	}
	return rc;
}

void bx_snapshot_free(bx_snapshot_t *s)
{
	for (size_t i = 0; i < s->owned_count; i++)
		free(s->owned[i]);
	free(s->owned);
	for (size_t i = 0; i < s->nforeign; i++)
		free(s->foreign[i]);
	free(s->foreign);
	free(s->samples);
	memset(s, 0, sizeof *s);
}
