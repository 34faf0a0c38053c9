/*
 * stats_trail_writer.h -- what the generated billing_trail_<probe>()
 * (stats_gen.c, provider/trail_emit.py) need from lib/stats_trail.c, and
 * the thresholds they define for it.
 */
#ifndef BILLING_STATS_TRAIL_WRITER_H
#define BILLING_STATS_TRAIL_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "stats_trail.h"
#include "stats_writer.h" /* BS_HIDDEN */

/* One fire as its trail event keeps it: its kind (the probe's "trail"
 * line), its integers and its strings (NULL: none). */
typedef struct bs_trail_fire {
	uint16_t kind;
	int64_t ints[BS_TRAIL_INTS];
	const char *strs[BS_TRAIL_STRS];
} bs_trail_fire_t;

typedef struct bs_slow_handler {
	const char *handler;
	uint64_t ns;
} bs_slow_handler_t;

/* @@slow-threshold (generated): the default, then per handler (a NULL
 * handler ends the list). */
BS_HIDDEN extern const uint64_t bs_slow_default_ns_;
BS_HIDDEN extern const size_t bs_slow_nhandlers_;
BS_HIDDEN extern const bs_slow_handler_t bs_slow_handlers_[];

/* request-start opens request id (0: none), the thread's current one. */
BS_HIDDEN void bs_trail_start_(uint64_t id, const char *handler, const bs_trail_fire_t *f);
/* An event of request id (by_id), or of this thread's current request. */
BS_HIDDEN void bs_trail_event_(uint64_t id, int by_id, const bs_trail_fire_t *f);
/* request-done: the last event; the trail committed when slow. */
BS_HIDDEN void bs_trail_done_(uint64_t id, const char *handler, int32_t status, uint64_t duration_ns,
                              const bs_trail_fire_t *f);

/* A forked child's: the parent's open requests are not its own. */
BS_HIDDEN void bs_trail_forget_(void);

/* The segment's ring (lib/stats.c): made with the segment; NULL with the
 * stats off. */
BS_HIDDEN struct bs_trail_ring *bs_trail_ring_(void);

#endif /* BILLING_STATS_TRAIL_WRITER_H */
