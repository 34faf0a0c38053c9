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

/* Every map holds at most this many label sets (billing.d's
 * "@@label-sets"); a fire whose new label set does not fit goes to the
 * map's fold map, and is counted in the "dropped" array (one slot per
 * map, BX_MAP_*) only if that refuses it too. */
#define BX_MAX_ENTRIES BX_LABEL_SETS

/* --binary PROGRAM: a program file, as the kernel's inode names it (its
 * super block's device, MKDEV-encoded as the kernel keeps it, and its
 * inode number); the key of bx_programs, whose value is the USDT cookie
 * of the target that counts the processes running it. */
struct bx_program_key {
	bx_u64 dev;
	bx_u64 ino;
};

/* Program files bx_programs holds at most (every --binary together). */
#define BX_MAX_PROGRAM_FILES 4096

#endif /* BILLING_EXPORTER_H */
