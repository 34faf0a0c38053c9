/*
 * foreign_families.h -- families that stats segments describe by their
 * own descriptions, read once per snapshot (foreign_families.c).
 */
#ifndef BX_FOREIGN_FAMILIES_H
#define BX_FOREIGN_FAMILIES_H

#include "samples.h"
#include "stats_source.h"

/* A family a segment describes stays in its own namespace: it may not
 * take a name Prometheus gives series of its own (these, and names that
 * begin with these prefixes), a name of this exporter's own, the series of
 * another family (the same name once every trailing _total, _created,
 * _count, _sum and _bucket is taken off), or a label name that scrapes and
 * the fleet (deploy/fleet/) attach.  Each refused family is one line, not
 * served. */
#define BX_FOREIGN_RESERVED_NAMES "up ALERTS ALERTS_FOR_STATE"
#define BX_FOREIGN_RESERVED_PREFIXES "scrape_ billing_exporter_ __"
#define BX_FOREIGN_RESERVED_LABELS "job instance host service billing_probes"

/* A table family's rows that stats segments describe by their own
 * descriptions, where this exporter's tables do not hold their map in
 * that shape (foreign_families.c), per label set. */
typedef struct bx_parts {
	bx_series_t *items;
	size_t n, cap;
} bx_parts_t;

/* Every stats reading's families looked at once per snapshot: a table
 * family's rows from maps of another shape (summed with the table's when
 * described alike, else one line), and the families the tables do not
 * name (emitted after the table's).  NULL when out of memory. */
typedef struct bx_foreign bx_foreign_t;
bx_foreign_t *bx_foreign_collect(bx_stats_t *stats, unsigned groups, bx_snapshot_t *s);
const bx_parts_t *bx_foreign_table_parts(const bx_foreign_t *f, const bx_metric_t *m);
int bx_foreign_emit(bx_foreign_t *f);
void bx_foreign_free(bx_foreign_t *f);

#endif /* BX_FOREIGN_FAMILIES_H */
