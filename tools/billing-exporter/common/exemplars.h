/*
 * exemplars.h -- where exemplars come from: a source answers, per
 * histogram bucket sample, the latest request that fell in that bucket
 * (lower, upper], and per counter sample the latest request it counted,
 * or nothing.  The writers ask it through bx_exemplar_of() (format.h) for
 * every bucket and counter of an OpenMetrics or protobuf scrape and write
 * what it answers only when the value lies in the bucket: a request shown
 * on the wrong bucket is refused.
 */
#ifndef BX_EXEMPLARS_H
#define BX_EXEMPLARS_H

#include "samples.h"

/* Seconds since the epoch no clock gives (past the year 300,000): an
 * exemplar's time in milliseconds below it fits in 64 bits. */
#define BX_EXEMPLAR_LATEST 1e13

typedef struct bx_exemplar {
	bx_u64 request_id; /* written in full, request_id="<up to 20 digits>": its one
	                    * label, 30 characters, within OpenMetrics' 128 */
	double value;      /* in the family's unit, e.g. seconds */
	double timestamp;  /* seconds since the epoch, when it completed: shown
	                    * only in (0, BX_EXEMPLAR_LATEST) */
} bx_exemplar_t;

typedef struct bx_exemplar_source {
	/* 1 and *out filled when the sample has an exemplar, 0 when not: for
	 * a bucket, one in (lower, upper] of the sample's series; for a
	 * counter (lower -inf, upper +inf), one it counted.  The sample
	 * carries the family and its labels (handler, target, le). */
	int (*latest)(void *ctx, const bx_sample_t *bucket, double lower, double upper, bx_exemplar_t *out);
	void *ctx;
} bx_exemplar_source_t;

#endif /* BX_EXEMPLARS_H */
