/*
 * format.h -- a snapshot written as Prometheus text (0.0.4), OpenMetrics
 * 1.0, protobuf (format_protobuf.c), a table for a terminal, or JSON
 * lines.
 */
#ifndef BX_FORMAT_H
#define BX_FORMAT_H

#include <stddef.h>

#include "samples.h"
#include "text_buf.h" /* tools/probe-reader */

typedef enum bx_format { BX_FMT_PROMETHEUS,
	                 BX_FMT_OPENMETRICS,
	                 BX_FMT_TABLE,
	                 BX_FMT_JSON,
	                 BX_FMT_PROTOBUF } bx_format_t;

#define BX_CONTENT_TYPE_PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"
#define BX_CONTENT_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define BX_CONTENT_TYPE_PROTOBUF \
  "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

/* Append the snapshot to b in format f.  now_seconds stamps JSON lines. */
void bx_format(const bx_snapshot_t *s, bx_format_t f, double now_seconds, pr_buf_t *b);

/* The snapshot as OpenMetrics, each histogram bucket with the exemplar
 * src has for it (none when src is NULL). */
void bx_format_openmetrics(const bx_snapshot_t *s, const bx_exemplar_source_t *src, pr_buf_t *b);

/* The snapshot as length-delimited io.prometheus.client.MetricFamily
 * messages (format_protobuf.c): histograms with native buckets twice,
 * native then classic; the exemplars src has (none when NULL) on their
 * classic buckets, counters and native series. */
void bx_format_protobuf(const bx_snapshot_t *s, const bx_exemplar_source_t *src, pr_buf_t *b);

/* exemplar.c, for the writers: 1 and *out when src has an exemplar for x, a bucket
 * (prev the sample before it: the bucket below when of the same series)
 * or a counter, that may be shown: its value in the bucket, finite, with
 * a time.  0 otherwise (src NULL, any other sample). */
int bx_exemplar_of(const bx_exemplar_source_t *src, const bx_sample_t *prev, const bx_sample_t *x,
                   bx_exemplar_t *out);

#endif /* BX_FORMAT_H */
