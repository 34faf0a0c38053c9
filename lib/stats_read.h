/*
 * stats_read.h -- read a stats segment (stats_segment.h) into rows: per
 * map, each label set's decoded labels and its cells summed over every
 * thread slot.  For billing-exporter, tests and tools; no privilege
 * needed beyond reading the file.
 *
 * The file belongs to another process, maybe another user: nothing in it
 * is trusted.  Every offset, count and index is checked against the file
 * and this build's own layout before it is used; the reader uses pread(),
 * never a mapping (a writer that shrinks its file would SIGBUS a mapping
 * reader).  A segment that fails a check is refused with a one-line
 * reason; no partial result is returned.
 */
#ifndef BILLING_STATS_READ_H
#define BILLING_STATS_READ_H

#include <stddef.h>
#include <stdint.h>

#include "billing_metrics_layout.h"
#include "stats_segment.h"

/* How a row's label field was recorded. */
enum { BS_FIELD_VALUE,    /* a dictionary value */
       BS_FIELD_FOLDED,   /* a value past the 64th: "other" (an int one is non-zero) */
       BS_FIELD_OVERFLOW, /* the overflow row: "other", value unknown */
};

typedef struct bs_read_row {
	int state[BX_MAX_FIELDS];
	char text[BX_MAX_FIELDS][BS_VALUE_BYTES + 1]; /* strings as written (bounded), ints in decimal, "other" */
	int32_t ints[BX_MAX_FIELDS];                  /* int fields' values (FOLDED: 1) */
	uint64_t cells[BX_MAX_CELLS];
} bs_read_row_t;

typedef struct bs_segment {
	uint32_t pid, state; /* BS_RUNNING, BS_EXITED */
	uint64_t generation, start_time;
	uint32_t slots_used, nslots, overflow_used;
	size_t nrows[BX_MAP_COUNT];
	bs_read_row_t all_rows[BS_ROWS_TOTAL]; /* each map's rows in turn: read them with bs_row() */
} bs_segment_t;

/* Row r (< nrows[m]) of map m. */
static inline const bs_read_row_t *bs_row(const bs_segment_t *s, int m, size_t r)
{
	return &s->all_rows[billing_stats_maps_[m].row_base + r];
}

/* Read the segment in file descriptor fd.  0, or -1 with a one-line
 * reason in err (truncated, another layout, corrupt, ...). */
int bs_read_fd(int fd, bs_segment_t *out, char *err, size_t errlen);
/* The same from bytes in memory (the fuzz replay). */
int bs_read_mem(const unsigned char *data, size_t size, bs_segment_t *out, char *err, size_t errlen);
/* Open path (O_NOFOLLOW) and read it. */
int bs_read_path(const char *path, bs_segment_t *out, char *err, size_t errlen);

#endif /* BILLING_STATS_READ_H */
