/*
 * exemplars.h -- where OpenMetrics exemplars come from: a source answers,
 * per histogram bucket sample, the latest request that fell in that
 * bucket (lower, upper], or nothing.  format.c asks it for every bucket
 * of an OpenMetrics scrape and prints what it answers only when the value
 * lies in the bucket: a request shown on the wrong bucket is refused.
 */
#ifndef BX_EXEMPLARS_H
#define BX_EXEMPLARS_H

#include "samples.h"

typedef struct bx_exemplar {
	bx_u64 request_id; /* printed in full, request_id="<up to 20 digits>": within
	                    * OpenMetrics' 128-character limit on an exemplar's labels */
	double value;      /* in the family's unit, e.g. seconds */
	double timestamp;  /* seconds since the epoch, when it completed */
} bx_exemplar_t;

typedef struct bx_exemplar_source {
	/* 1 and *out filled when the bucket (lower, upper] of the sample's
	 * series has an exemplar, 0 when not.  The sample carries the family
	 * and its labels (handler, target, le). */
	int (*latest)(void *ctx, const bx_sample_t *bucket, double lower, double upper, bx_exemplar_t *out);
	void *ctx;
} bx_exemplar_source_t;

#endif /* BX_EXEMPLARS_H */
