/*
 * billing_exporter.h -- what the BPF programs and user space both see.
 *
 * The keys, values, histogram bounds and argument positions of every map
 * are generated from billing.d's metric declarations
 * (billing_metrics_layout.h, provider/metrics.py); only the exporter's own
 * limits are here.  C99 and BPF C alike; no libc.
 */
#ifndef BILLING_EXPORTER_H
#define BILLING_EXPORTER_H

#include "billing_metrics_layout.h"

/* Every map holds at most this many label sets; a fire whose new label
 * set does not fit is counted in the "dropped" array instead (one slot
 * per map, BX_MAP_*). */
#define BX_MAX_ENTRIES 16384

#endif /* BILLING_EXPORTER_H */
