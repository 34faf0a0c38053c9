/*
 * snapshot.h -- one reading of every enabled map, turned into samples:
 * (family, sample suffix, labels, value), in the order of the metric
 * table.  The writers (format.c) print the same samples as Prometheus
 * text, OpenMetrics, a table or JSON lines.
 */
#ifndef BX_SNAPSHOT_H
#define BX_SNAPSHOT_H

#include <stddef.h>

#include "exporter.h"
#include "stats_layout.h"

#define BX_SAMPLE_LABELS 4 /* the metric's labels + le */

/* One row of a map, from a BPF map or a stats segment: its key decoded
 * into labels, its value as 64-bit cells (metric_table.h): fires at cell
 * 0, then each quantity's count, sum and buckets.  Every cell is a sum,
 * so per-CPU copies, thread slots and rows that share labels add cell by
 * cell. */
struct bx_row {
	const char *labels[BX_MAX_FIELDS]; /* admitted values or "other" */
	long long ints[BX_MAX_FIELDS];     /* INT32 fields, raw (outcomes, filters) */
	bx_u64 cells[BX_MAX_CELLS];
};

typedef struct bx_sample {
	const bx_metric_t *metric; /* its family: name, type, help, unit */
	const char *suffix;        /* "", "_bucket", "_sum", "_count" */
	size_t nlabels;
	const char *label_names[BX_SAMPLE_LABELS];
	const char *label_values[BX_SAMPLE_LABELS]; /* sanitized, stable for the snapshot */
	double value;
} bx_sample_t;

typedef struct bx_snapshot {
	bx_sample_t *samples;
	size_t count, cap;
	char **owned; /* strings the snapshot allocated (le, target labels) */
	size_t owned_count, owned_cap;
	bx_u64 folded_fires[BX_MAX_MAPS][BX_MAX_FIELDS]; /* fires shown under "other", per label */
	bx_metric_t **foreign;                           /* families only stats segments describe (foreign_families.c) */
	size_t nforeign;
} bx_snapshot_t;

/* Read the maps and build the samples.  Call with ex->lock held: the
 * label slots change.  0, or -1 when out of memory. */
int bx_snapshot_take(bx_exporter_t *ex, bx_snapshot_t *snap);
void bx_snapshot_free(bx_snapshot_t *snap);

/* For the snapshot's builders (snapshot.c, foreign_families.c): a copy
 * of text the snapshot frees; a new sample of family m; a label on it.
 * NULL or -1 when out of memory (or out of label room). */
char *bx_snapshot_own(bx_snapshot_t *s, const char *text);
bx_sample_t *bx_snapshot_add(bx_snapshot_t *s, const bx_metric_t *m, const char *suffix, double value);
int bx_sample_label(bx_sample_t *x, const char *name, const char *value);

/* Rows that stats segments describe by their own descriptions, where
 * this exporter's tables do not hold their map in that shape
 * (foreign_families.c): per label set, the label values of its family
 * and the cells it reads (its count; or its quantity's count, sum and
 * buckets). */
#define BX_PART_CELLS (BS_LAYOUT_BOUNDS + 3)
typedef struct bx_part {
	const char *values[BX_MAX_FIELDS];
	bx_u64 cells[BX_PART_CELLS];
} bx_part_t;
typedef struct bx_parts {
	bx_part_t *items;
	size_t n, cap;
} bx_parts_t;

/* Every stats reading's families looked at once per snapshot: a table
 * family's rows from maps of another shape (summed with the table's when
 * described alike, else one line), and the families the tables do not
 * name (emitted after the table's).  NULL when out of memory. */
typedef struct bx_foreign bx_foreign_t;
bx_foreign_t *bx_foreign_collect(bx_exporter_t *ex, bx_snapshot_t *s);
const bx_parts_t *bx_foreign_table_parts(const bx_foreign_t *f, const bx_metric_t *m);
int bx_foreign_emit(bx_foreign_t *f);
void bx_foreign_free(bx_foreign_t *f);

#endif /* BX_SNAPSHOT_H */
