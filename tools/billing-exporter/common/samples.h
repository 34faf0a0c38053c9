/*
 * samples.h -- what a snapshot is: (family, sample suffix, labels,
 * value), in the order they are added.  The snapshot (snapshot.c) and
 * the stats source's own families (foreign_families.c) add samples, each
 * family's series through bx_snapshot_series(); the writers (format.c)
 * print them as Prometheus text, OpenMetrics, protobuf, a table or JSON
 * lines.
 */
#ifndef BX_SAMPLES_H
#define BX_SAMPLES_H

#include <stddef.h>

#include "metric_table.h"

#define BX_SAMPLE_LABELS 4 /* the metric's labels + le */

/* A series' native (exponential) buckets, as client_model sends them:
 * bucket k (1..nbuckets) is client_model's index first_index + k - 1,
 * holding (2^((i-1)/2^schema), 2^(i/2^schema)] of the family's unit. */
typedef struct bx_native {
	int schema, first_index;
	double zero_threshold; /* 2^low: the zero bucket holds [0, zero_threshold] */
	size_t nbuckets;
	const bx_u64 *cells; /* the zero bucket, buckets 1..nbuckets, out of range */
} bx_native_t;

typedef struct bx_sample {
	const bx_metric_t *metric; /* its family: name, type, help, unit */
	const char *suffix;        /* "", "_bucket", "_sum", "_count" */
	size_t nlabels;
	const char *label_names[BX_SAMPLE_LABELS];
	const char *label_values[BX_SAMPLE_LABELS]; /* sanitized, stable for the snapshot */
	double value;
	const bx_native_t *native; /* on a histogram's "_count": its native buckets; NULL: none */
} bx_sample_t;

typedef struct bx_snapshot {
	bx_sample_t *samples;
	size_t count, cap;
	char **owned; /* strings the snapshot allocated (le, target labels) */
	size_t owned_count, owned_cap;
	bx_u64 folded_fires[BX_MAP_COUNT][BX_MAX_FIELDS]; /* fires shown under "other", per label */
	bx_metric_t **foreign;                            /* families only stats segments describe (foreign_families.c) */
	size_t nforeign;
} bx_snapshot_t;

/* For the snapshot's builders (snapshot.c, foreign_families.c): a copy
 * of text the snapshot frees; a new sample of family m; a label on it.
 * NULL or -1 when out of memory (or out of label room). */
char *bx_snapshot_own(bx_snapshot_t *s, const char *text);
void *bx_snapshot_alloc(bx_snapshot_t *s, size_t size); /* zeroed, freed with the snapshot */
bx_sample_t *bx_snapshot_add(bx_snapshot_t *s, const bx_metric_t *m, const char *suffix, double value);
int bx_sample_label(bx_sample_t *x, const char *name, const char *value);
/* The value of x's label name, or NULL. */
const char *bx_sample_label_value(const bx_sample_t *x, const char *name);

/* One label set of a family, before its series are summed: its label
 * values and its cells, a count's one (fires) or a quantity's count, sum
 * and buckets. */
typedef struct bx_series {
	size_t n; /* labels */
	const char *values[BX_MAX_FIELDS];
	bx_u64 cells[BX_MAX_BOUNDS + 3];
	const bx_u64 *native; /* its row's native cells (map_row.h); NULL: none */
} bx_series_t;
/* A histogram's native buckets from the k series of one label set; NULL
 * when they have none (or may be wrong: then only classic buckets go). */
typedef const bx_native_t *(*bx_natives_fn)(bx_snapshot_t *s, const bx_metric_t *m, const bx_series_t *same,
                                            size_t k);
/* Family m's samples from v[0, n) (sorted here): series of one label set
 * summed cell by cell, each written as its count, q's sum, or q's
 * buckets, _sum and _count (natives, when given, says the count's native
 * buckets).  0, or -1 when out of memory. */
int bx_snapshot_series(bx_snapshot_t *s, const bx_metric_t *m, const bx_quantity_t *q, bx_series_t *v, size_t n,
                       bx_natives_fn natives);

/* Frees every sample, owned string and foreign family; s is empty after. */
void bx_snapshot_free(bx_snapshot_t *snap);

/* --- where exemplars come from ------------------------------------------- */

/* A source answers, per histogram bucket sample, the latest request that
 * fell in that bucket (lower, upper], and per counter sample the latest
 * request it counted, or nothing.  The writers ask it through
 * bx_exemplar_of() (format.h) for every bucket and counter of an
 * OpenMetrics or protobuf scrape and write what it answers only when the
 * value lies in the bucket: a request shown on the wrong bucket is
 * refused.
 *
 * Seconds since the epoch no clock gives (past the year 300,000): an
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

#endif /* BX_SAMPLES_H */
