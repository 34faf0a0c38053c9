/*
 * exporter.h -- the running exporter: its sources (the USDT targets and
 * their BPF object, the stats targets), the label slots both feed, and
 * what the last scrape cost.  One instance; the HTTP threads and the main
 * loop share it under its lock.
 */
#ifndef BX_EXPORTER_H
#define BX_EXPORTER_H

#include <pthread.h>

#include "samples.h"
#include "labels.h"
#include "stats_source.h"
#include "usdt.h"

typedef struct bx_exporter {
	unsigned groups;      /* BX_GROUP_* enabled */
	bx_targets_t targets; /* --pid and --binary: served through USDT */
	bx_usdt_t usdt;
	bx_stats_t *stats; /* --stats-dir, and --pid served from a segment */
	bx_label_slot_t slots[BX_MAP_COUNT][BX_MAX_FIELDS];
	double last_scrape_seconds;
	const bx_exemplar_source_t *exemplars; /* OpenMetrics' bucket exemplars; NULL none */
	pthread_mutex_t lock;
} bx_exporter_t;

/* --- a snapshot of it (snapshot.c) --------------------------------------- */

/* Read the maps and build the samples.  Call with ex->lock held: the
 * label slots change.  With natives 0, histograms carry no native
 * buckets (for an exposition that cannot send them: they are not
 * summed).  0, or -1 when out of memory. */
int bx_snapshot_take(bx_exporter_t *ex, bx_snapshot_t *snap, int natives);

#endif /* BX_EXPORTER_H */
