/*
 * snapshot.h -- one reading of every enabled map, turned into samples:
 * (family, sample suffix, labels, value), in the order of the metric
 * table.  The writers (format.c) print the same samples as Prometheus
 * text, OpenMetrics, a table or JSON lines.
 */
#ifndef BX_SNAPSHOT_H
#define BX_SNAPSHOT_H

#include "exporter.h"
#include "samples.h"

/* Read the maps and build the samples.  Call with ex->lock held: the
 * label slots change.  With natives 0, histograms carry no native
 * buckets (for an exposition that cannot send them: they are not
 * summed).  0, or -1 when out of memory. */
int bx_snapshot_take(bx_exporter_t *ex, bx_snapshot_t *snap, int natives);

#endif /* BX_SNAPSHOT_H */
