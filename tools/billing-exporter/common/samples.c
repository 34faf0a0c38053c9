/*
 * samples.c -- the snapshot's sample container (samples.h).
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
