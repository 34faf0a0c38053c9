/*
 * stats_writer.h -- what the generated half of the stats writer
 * (stats_gen.c, provider/stats_emit.py) needs from lib/stats.c.
 *
 * The hot-path rule: a thread stores only to its own slot, with a relaxed
 * load and a relaxed store (no read-modify-write instruction, no lock
 * prefix, no line another thread writes); the reader sums the slots.  The
 * one exception is the overflow slot that threads share once every slot is
 * taken: there an add is atomic.  The relaxed accesses are plain moves on
 * x86-64 and arm64; they keep a concurrent reader's view of a cell whole
 * and make the sharing explicit to the compiler and to TSan.
 */
#ifndef BILLING_STATS_WRITER_H
#define BILLING_STATS_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define BX_ADD(lvalue, x, shared) \
  ((shared) ? (void)__atomic_fetch_add(&(lvalue), (x), __ATOMIC_RELAXED) \
	    : __atomic_store_n(&(lvalue), __atomic_load_n(&(lvalue), __ATOMIC_RELAXED) + (x), \
	                       __ATOMIC_RELAXED))

#include "billing_metrics_layout.h"
#include "stats_segment.h"

#if defined(__GNUC__)
#  define BS_HIDDEN __attribute__((visibility("hidden")))
#else
#  define BS_HIDDEN
#endif

/* This thread's cells for the row of `key` in map `map` (its struct
 * bx_value_*), or NULL when the stats are off.  *shared is 1 when the
 * thread counts in the shared overflow slot. */
BS_HIDDEN void *bs_cells_(int map, const void *key, int *shared);

/* Copy a label argument into its key field: NULL as "", cut to size - 1
 * bytes, the rest of the field zero (keys compare as bytes). */
BS_HIDDEN void bs_copy_label_(char *dst, const char *src, size_t size);

#endif /* BILLING_STATS_WRITER_H */
