/*
 * self_metrics.h -- the exporter's own metrics (billing_exporter_*),
 * each one row that names the function making its samples, as
 * node_exporter's collectors register themselves (self_metrics.c).
 *
 * BX_SELF(NAME, ...) is the metric billing_exporter_NAME, made by
 * self_NAME(): a row without its function does not compile, and a row's
 * name is its function's, so no row is served under another's name
 * (tests/exporter/test_self_rows.py).
 */
#ifndef BX_SELF_METRICS_H
#define BX_SELF_METRICS_H

#include "metric_table.h"
#include "samples.h"

struct bx_exporter;

/* Family m's samples into s: 0, or -1 when out of memory. */
typedef int (*bx_self_fn)(const struct bx_exporter *ex, bx_snapshot_t *s, const bx_metric_t *m);

typedef struct bx_self_metric {
	bx_metric_t metric; /* no map: BX_SRC_SELF, group BX_GROUP_SELF; its labels in self_labels */
	bx_self_fn samples;
} bx_self_metric_t;

#define BX_SELF(name, type, unit, labels, help) \
  { \
    { "billing_exporter_" #name, type, unit, help, -1, BX_SRC_SELF, -1, BX_WHERE_ALL, 0, { { 0 } }, labels }, self_##name \
  }

extern const bx_self_metric_t bx_self_metrics[];
extern const size_t bx_self_metric_count;

#endif /* BX_SELF_METRICS_H */
