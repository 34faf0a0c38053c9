/*
 * stats_read.h -- read a stats segment (stats_segment.h) into rows: per
 * map, each label set's decoded labels and its cells summed over every
 * thread slot, and its native cells.  For billing-exporter, tests and
 * tools; no privilege needed beyond reading the file.
 *
 * The file belongs to another process, maybe another user: nothing in it
 * is trusted.  Every offset, count and index is checked against the file
 * and the segment's own description (stats_layout.h, parsed within a
 * small budget) before it is used.  A running writer's file is mapped
 * read-only and kept mapped between readings: its native cells are copied
 * from the pages known to hold data (stats_read_map.c); everything else
 * is read with pread().  A writer that shrinks its file under a reading
 * ends that reading (SIGBUS, caught), nothing more.  A segment that
 * fails a check is refused with a one-line reason; no partial result is
 * returned.  The reader's memory and work follow what the segment uses:
 * the rows its writer published and the slots its threads claimed
 * (docs/stats.md, "Reading").  Parsed descriptions are cached
 * process-wide: one thread reads at a time.
 *
 * A reading into a bs_segment_t that holds an earlier reading of the same
 * segment (its generation) reads what changed since: the description,
 * the labels of rows it has and the native cells of classic buckets whose
 * counts did not change are not read again, and bs_segment_t.changes says
 * what changed (a reader that keeps sums adds those).  A row's native
 * cells are kept sparse: the non-zero ones, read per classic bucket that
 * counted (stats_layout.h: bs_lquantity_t.native_from), never the row's
 * whole block.
 */
#ifndef BILLING_STATS_READ_H
#define BILLING_STATS_READ_H

#include <stddef.h>
#include <stdint.h>

#include "billing_metrics_layout.h"
#include "stats_layout.h"
#include "stats_segment.h"

/* How a row's label field was recorded. */
enum { BS_FIELD_VALUE,    /* a dictionary value */
       BS_FIELD_FOLDED,   /* a value past the 64th: "other" (an int one is non-zero) */
       BS_FIELD_OVERFLOW, /* the overflow row: "other", value unknown */
};

/* A row's label set as its segment's description lays it out: the
 * fields of its map there (bs_lmap_t), which may be more than this
 * build's.  Its cells: bs_map_cells(), bs_row_cells(). */
typedef struct bs_read_row {
	int state[BS_MAX_FIELDS];
	char text[BS_MAX_FIELDS][BS_VALUE_BYTES + 1]; /* strings as written (bounded), ints in decimal, "other";
	                                               * zero-padded: two label sets compare as bytes */
	int32_t ints[BS_MAX_FIELDS];                  /* int fields' values (FOLDED: 1) */
} bs_read_row_t;

/* What reading one segment cost: a reader's work is bounded by what the
 * segment uses (its published row counts and claimed slots), checked
 * against the file and BS_READ_BUDGET before any of it is read. */
typedef struct bs_read_work {
	uint64_t bytes; /* read from the file (or memory) */
	uint64_t reads; /* pread() calls (or copies) */
	uint64_t rows;  /* rows decoded */
	uint64_t slots; /* thread slots summed */
} bs_read_work_t;

/* The most bytes one reading of one segment reads: a segment whose row
 * counts and claimed slots ask for more is refused before any of it is
 * read.  32 MiB covers every slot of a segment of the default 64 threads
 * (BILLING_STATS_THREADS) with every row of every map in use. */
#define BS_READ_BUDGET (32ull << 20)

/* A row's native cells of one value as last read: the non-zero ones, by
 * cell (0: the zero bucket, 1 .. nnative, nnative + 1: out of range). */
typedef struct bs_native_cell {
	uint32_t cell;
	uint64_t count;
} bs_native_cell_t;
typedef struct bs_native_cells {
	bs_native_cell_t *c; /* ascending by cell; owned */
	uint32_t n, cap;
} bs_native_cells_t;

/* What a reading changed since the one before it (of this generation):
 * per row whose cells changed, the differences (new - old, modulo 2^64),
 * and the native cells that changed with theirs.  A fresh reading (a new
 * generation, or the first) lists every row with a count, from zero. */
typedef struct bs_row_change {
	uint32_t sm, row;                    /* the segment's own map and row (bs_map_row) */
	uint32_t native_first, native_count; /* its native changes: natives[first, first + count) */
	uint64_t cells[BS_CELLS_MAX];        /* the map's cells' differences */
} bs_row_change_t;
typedef struct bs_native_change {
	uint32_t value, cell; /* the map's value (bs_lmap_t.values[]) and its native cell */
	uint64_t delta;
} bs_native_change_t;
typedef struct bs_changes {
	int fresh; /* the rows start from nothing: a new generation (the old one's rows are gone) or the first */
	bs_row_change_t *rows;
	size_t nrows, rows_cap;
	bs_native_change_t *natives;
	size_t nnatives, natives_cap;
} bs_changes_t;

/* A file mapped read-only, known by its device, inode and size, and the
 * pages of it known to hold data (read there; the others with pread). */
typedef struct bs_file_map {
	const unsigned char *at; /* NULL: none */
	uint64_t size, dev, ino;
	uint64_t backed;      /* its bytes in memory at the last reading (st_blocks) */
	unsigned char *known; /* a bit per page: holds data */
} bs_file_map_t;

typedef struct bs_segment {
	uint32_t pid, state; /* BS_RUNNING, BS_EXITED */
	uint64_t generation, start_time;
	uint32_t slots_used, nslots, overflow_used;
	/* The segment's own maps, as its description says (layout->maps[sm]):
	 * map sm's rows are rows[map_first[sm] ...], read with bs_map_row(). */
	const bs_layout_t *layout; /* a reference (bs_segment_free drops it) */
	size_t map_rows[BS_MAX_MAPS], map_first[BS_MAX_MAPS];
	/* The same rows by this build's maps (BX_MAP_*): a map of this build
	 * that the segment holds in exactly this build's shape (same probe,
	 * fields, known values, cells, buckets; bs_lmap_t.build_map), else no
	 * rows.  Read them with bs_row(). */
	size_t nrows[BX_MAP_COUNT];
	size_t first_row[BX_MAP_COUNT];
	bs_read_row_t *rows; /* the rows in use, map after map; owned (bs_segment_free) */
	size_t rows_cap;
	/* Native cells (stats_layout.h: bs_lquantity_t.nnative): per row,
	 * BS_LAYOUT_VALUES of them (one per value of its map), at
	 * natives[row * BS_LAYOUT_VALUES + value]; bs_map_native() gives a
	 * row's as its block lays them out. */
	bs_native_cells_t *natives; /* owned */
	int has_native;             /* 0: its writer counted none (BILLING_STATS_NATIVE=off) */
	uint32_t flags;             /* its header's (BS_FLAG_*) */
	uint64_t trail_offset;      /* its header's: the trails' ring (0: none) */
	unsigned char *recheck;     /* per row: its native cells are behind its counts, read in every
	                             * counted bucket next time (a reading deferred them, or a writer
	                             * without BS_FLAG_NATIVE_FIRST added a native cell after its bucket) */
	/* Set by the caller before a reading: it may leave a running writer's
	 * native cells behind its counts (a scrape that serves none); the
	 * next reading without it brings them up to date.  A writer that has
	 * exited is read whole. */
	int defer_natives;
	int natives_behind; /* some row's native cells are behind its counts (its last reading deferred them) */
	uint64_t *sums;     /* every row's cells as read, map after map, contiguous: a map whose
	                     * block did not change has no row that did (owned) */
	size_t sums_cap, map_first_cell[BS_MAX_MAPS];
	int build_sm[BX_MAP_COUNT]; /* this build's map m is the segment's map build_sm[m]; -1: none */
	bs_file_map_t map;          /* its file while its writer runs (owned) */
	bs_read_work_t work;        /* of the last reading, refused or not */
	bs_changes_t changes;       /* of the last reading: valid until the next reading of any segment
	                             * (the reader's memory, not the segment's) */
} bs_segment_t;

/* Row r (< nrows[m]) of this build's map m. */
static inline const bs_read_row_t *bs_row(const bs_segment_t *s, int m, size_t r)
{
	return &s->rows[s->first_row[m] + r];
}

/* Row r (< map_rows[sm]) of the segment's own map sm. */
static inline const bs_read_row_t *bs_map_row(const bs_segment_t *s, size_t sm, size_t r)
{
	return &s->rows[s->map_first[sm] + r];
}

/* The cells of row r (< map_rows[sm]) of the segment's own map sm:
 * layout->maps[sm].cells of them. */
static inline const uint64_t *bs_map_cells(const bs_segment_t *s, size_t sm, size_t r)
{
	return s->sums + s->map_first_cell[sm] + r * s->layout->maps[sm].cells;
}

/* The cells of row r (< nrows[m]) of this build's map m. */
static inline const uint64_t *bs_row_cells(const bs_segment_t *s, int m, size_t r)
{
	return bs_map_cells(s, (size_t)s->build_sm[m], r);
}

/* The native cells of row r of the segment's own map sm into out
 * (layout->maps[sm].native_cells of them, as the row's block lays them
 * out: value after value); 0 when it has none (out untouched), else 1. */
int bs_map_native(const bs_segment_t *s, size_t sm, size_t r, uint64_t *out);

/* The segment's own map fed by probe (billing.d's spelling, "payment__auth"),
 * or -1. */
int bs_map_by_probe(const bs_segment_t *s, const char *probe);

/* A zeroed bs_segment_t is empty and ready to read into; a reading reuses
 * its memory.  This frees it (and leaves it empty). */
void bs_segment_free(bs_segment_t *s);

/* Read the segment in file descriptor fd into out: afresh, or when out
 * holds a reading of this segment's generation, what changed since (see
 * above; out->changes says what).  0, or -1 with a one-line reason in err
 * (truncated, another layout, corrupt, ...): out then holds its earlier
 * reading unchanged (none: empty), never part of this one. */
int bs_read_fd(int fd, bs_segment_t *out, char *err, size_t errlen);
/* The same, taken only when accept(ctx, header, ...) returns 0, asked
 * once the header is read and checked and before anything else is: 1
 * when it returns non-zero (its reason in err; out unchanged).  st: the
 * file as fstat showed it when it was opened (NULL: looked at here). */
struct stat;
typedef int (*bs_accept_fn)(void *ctx, const struct bs_header *h, char *err, size_t errlen);
int bs_read_fd_if(int fd, const struct stat *st, bs_segment_t *out, bs_accept_fn accept, void *ctx, char *err,
                  size_t errlen);
/* Whether the segment open at fd, read into seg, has committed trails
 * numbered `since` or later (stats_trail.h): one read of the ring's count;
 * 0 when it keeps none or has none new. */
int bs_trails_new_fd(int fd, const bs_segment_t *seg, int lane, uint64_t since);
/* The same from bytes in memory (the fuzz replay). */
int bs_read_mem(const unsigned char *data, size_t size, bs_segment_t *out, char *err, size_t errlen);
/* Open path (O_NOFOLLOW) and read it. */
int bs_read_path(const char *path, bs_segment_t *out, char *err, size_t errlen);
/* Forget out's reading (its memory kept) and its file: the next reading
 * is fresh. */
void bs_segment_forget(bs_segment_t *out);

#endif /* BILLING_STATS_READ_H */
