/*
 * trail_exemplars.h -- the exemplar source of the stats path: the latest
 * slow-request trail kept for exemplars (the ring's kept lane,
 * lib/stats_trail.h) per (handler, the billing_request_duration_seconds
 * bucket it fell in), taken from the segments stats_segments.c reads and
 * trusts, held across scrapes while its segment keeps it.
 */
#ifndef BX_TRAIL_EXEMPLARS_H
#define BX_TRAIL_EXEMPLARS_H

#include "exemplars.h"
#include "stats_trail.h"

typedef struct bx_trail_exemplars bx_trail_exemplars_t;

/* NULL when out of memory or when no family observes duration_ns. */
bx_trail_exemplars_t *bx_trail_exemplars_new(void);
void bx_trail_exemplars_free(bx_trail_exemplars_t *te);

/* Take the kept trails of one trusted reading of a segment: the latest
 * per (handler, bucket) wins; none that ends past this clock. */
void bx_trail_exemplars_take(bx_trail_exemplars_t *te, const bs_trails_t *trails);

/* The source for format.c; valid while te lives. */
const bx_exemplar_source_t *bx_trail_exemplars_source(bx_trail_exemplars_t *te);

#endif /* BX_TRAIL_EXEMPLARS_H */
