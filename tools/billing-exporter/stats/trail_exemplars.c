/*
 * trail_exemplars.c -- per (handler, duration bucket), the latest slow
 * request kept for exemplars (the kept lane of the trails of trusted
 * segments, stats_trail.h): the duration histogram sums every target's
 * rows per handler, so the latest of any target wins.  Only kept trails
 * are served, and each only while its segment still keeps it (its
 * keep_ns, less a tenth): every exemplar served resolves with
 * `billing-probes slow --id` for that long.  A bucket is found the same
 * way for a trail's duration and for the bucket format.c asks about (its
 * upper bound): the first bound at or above it, so a trail is answered
 * only for the bucket the histogram counted it in.
 *
 * Times are bounded by this reader's clock: a trail that says it ended
 * later than now (a hostile or broken writer, a clock stepped back) is
 * not taken, and one held from before a clock step no longer pins its
 * bucket against the trails after it.
 */
#include "stats_state.h"

#include <stdlib.h>
#include <string.h>

#include "metric_table.h"
#include "ticker.h"

/* A hostile writer may name any number of handlers: the store is
 * bounded, and a new key takes the place of the one that ended first. */
#define MAX_EXEMPLARS 1024
#define FUTURE_SECONDS 10.0 /* how far past this reader's clock a trail may end (clocks of one host) */

typedef struct entry {
	char handler[BS_TRAIL_HANDLER];
	size_t bucket;
	double until; /* served until then: its segment keeps it that long */
	bx_exemplar_t ex;
} entry_t;

struct bx_trail_exemplars {
	bx_exemplar_source_t source;
	const bx_metric_t *family; /* the histogram of duration_ns */
	double bounds[BX_MAX_BOUNDS];
	size_t nbounds;
	entry_t *entries;
	size_t count;
};

static const bx_quantity_t *quantity_of(const bx_metric_t *m)
{
	return &bx_quantities[bx_maps[m->map].quantities[m->quantity].quantity];
}

/* Index of the bucket (bound[i-1], bound[i]] that holds x; nbounds: +Inf. */
static size_t bucket_of(const bx_trail_exemplars_t *te, double x)
{
	size_t i = 0;
	while (i < te->nbounds && !(x <= te->bounds[i]))
		i++;
	return i;
}

static entry_t *find(bx_trail_exemplars_t *te, const char *handler, size_t bucket)
{
	for (size_t i = 0; i < te->count; i++) {
		entry_t *e = &te->entries[i];
		if (e->bucket == bucket && strcmp(e->handler, handler) == 0)
			return e;
	}
	return NULL;
}

static int latest(void *ctx, const bx_sample_t *bucket, double lower, double upper, bx_exemplar_t *out)
{
	bx_trail_exemplars_t *te = ctx;
	const char *handler = bx_sample_label_value(bucket, "handler");
	(void)lower;
	if (bucket->metric != te->family || !handler)
		return 0;
	const entry_t *e = find(te, handler, bucket_of(te, upper));
	double now = bx_seconds(CLOCK_REALTIME);
	if (!e || now > e->until || e->ex.timestamp > now + FUTURE_SECONDS)
		return 0;
	*out = e->ex;
	return 1;
}

/* The entry a new key goes to: a new one, or the one that ended first. */
static entry_t *place_for(bx_trail_exemplars_t *te)
{
	if (te->count < MAX_EXEMPLARS)
		return &te->entries[te->count++];
	entry_t *oldest = &te->entries[0];
	for (size_t i = 1; i < te->count; i++)
		if (te->entries[i].ex.timestamp < oldest->ex.timestamp)
			oldest = &te->entries[i];
	return oldest;
}

void bx_trail_exemplars_take(bx_trail_exemplars_t *te, const bs_trails_t *trails)
{
	double now = bx_seconds(CLOCK_REALTIME), keep = (double)trails->keep_ns / 1e9;
	for (size_t i = 0; i < trails->count; i++) {
		const struct bs_trail *t = &trails->trails[i];
		char handler[BS_TRAIL_HANDLER];
		memcpy(handler, t->handler, sizeof handler);
		handler[sizeof handler - 1] = '\0';
		double seconds = (double)t->duration_ns / quantity_of(te->family)->divide;
		double at = (double)t->end_unix_ns / 1e9;
		size_t bucket = bucket_of(te, seconds);
		if (at > now + FUTURE_SECONDS || at + keep * 0.9 < now)
			continue; /* not yet ended by this clock, or soon overwritten */
		entry_t *e = find(te, handler, bucket);
		if (e && e->ex.timestamp > at && e->ex.timestamp <= now + FUTURE_SECONDS)
			continue; /* a later one is held: latest wins */
		if (!e && !(e = place_for(te)))
			continue;
		memcpy(e->handler, handler, sizeof handler);
		e->bucket = bucket;
		e->until = at + keep * 0.9;
		e->ex.request_id = t->request_id;
		e->ex.value = seconds;
		e->ex.timestamp = at;
	}
}

bx_trail_exemplars_t *bx_trail_exemplars_new(void)
{
	const bx_metric_t *family = NULL;
	for (size_t i = 0; i < bx_metric_count && !family; i++)
		if (bx_metrics[i].source == BX_SRC_HIST && strcmp(quantity_of(&bx_metrics[i])->arg, "duration_ns") == 0)
			family = &bx_metrics[i];
	bx_trail_exemplars_t *te = family ? calloc(1, sizeof *te) : NULL;
	if (!te)
		return NULL;
	if (!(te->entries = calloc(MAX_EXEMPLARS, sizeof *te->entries))) {
		free(te);
		return NULL;
	}
	const bx_quantity_t *q = quantity_of(family);
	te->family = family;
	te->nbounds = q->nbounds;
	for (size_t i = 0; i < q->nbounds; i++)
		te->bounds[i] = strtod(q->le[i], NULL);
	te->source.latest = latest;
	te->source.ctx = te;
	return te;
}

void bx_trail_exemplars_free(bx_trail_exemplars_t *te)
{
	if (!te)
		return;
	free(te->entries);
	free(te);
}

const bx_exemplar_source_t *bx_trail_exemplars_source(bx_trail_exemplars_t *te)
{
	return &te->source;
}
