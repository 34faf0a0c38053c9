/*
 * stats_read_src.h -- what the segment reader's files share (stats_read.c
 * reads rows and cells, stats_read_native.c native cells,
 * stats_read_trails.c the trails): a source that reads a range of a file
 * (pread) or of bytes in memory (fuzzing) or fails, and the checks of a
 * segment's header and description.  Not for the reader's users.
 */
#ifndef BILLING_STATS_READ_SRC_H
#define BILLING_STATS_READ_SRC_H

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "stats_read.h"

typedef struct bs_src {
	int fd; /* or -1: mem */
	const unsigned char *mem;
	bs_file_map_t *map; /* the file, mapped (a running writer's): native cells are read there */
	uint64_t size;
	uint64_t backed;      /* bytes the file holds in memory or on disk (st_blocks), 0: unknown */
	bs_read_work_t *work; /* what the reading costs, counted as it goes */
	uint64_t dev, ino;    /* the file's (a mapping is kept for this file) */
	int fresh;            /* a first reading: every cell with pread, the pages holding data noted */
} bs_src_t;

#define BS_FAIL(...) \
  do { \
    snprintf(err, errlen, __VA_ARGS__); \
    return -1; \
  } while (0)

/* Where each map's rows start among all maps' rows (the writer lays them
 * out one map after another), and how many there are in all. */
typedef struct plan_rows {
	uint64_t rows[BS_MAX_MAPS], base[BS_MAX_MAPS], total;
	uint64_t native_at[BS_MAX_MAPS]; /* each map's native cells in the file */
	int native;                      /* the writer counted native buckets (not BILLING_STATS_NATIVE=off) */
} plan_rows_t;

/* The header against the segment's own layout and the file's size: its
 * maps and cells as described, its tables inside the file; pr says where
 * each map's rows and native cells are.  0, or -1 with err. */
int bs_check_layout_(const struct bs_header *h, const bs_layout_t *l, uint64_t size, plan_rows_t *pr, char *err,
                     size_t errlen);

/* n bytes at off into dst; -1 when the range is not wholly in the file. */
int bs_src_get_(const bs_src_t *s, uint64_t off, void *dst, uint64_t n);
/* n bytes of cells at off into dst: from the mapping where its pages are
 * known to hold data, else as bs_src_get_ (pread reads a hole as zeros;
 * a mapping's read would fill it, in its writer's file), and a page
 * found holding data known from then on.  A fresh reading reads with
 * pread only: it reads every counted cell once, and the mapping's
 * pages are then touched only as rows change (the exporter's resident
 * memory holds the pages of what changes, not of every segment).  -1 when not wholly in the
 * source. */
int bs_src_cells_(const bs_src_t *s, uint64_t off, uint64_t *dst, uint64_t n);

/* A reading of a mapping, guarded (stats_read_map.c): armed around the
 * parts that read it, a SIGBUS inside [lo, hi) returns to sigsetjmp(jb)
 * non-zero.  Per thread; the reading's own state must not be an
 * automatic variable changed after sigsetjmp. */
typedef struct bs_guard {
	sigjmp_buf jb;
	const unsigned char *lo, *hi;
	volatile sig_atomic_t on;
} bs_guard_t;
extern __thread bs_guard_t bs_guard_;
/* The largest file read in place; a larger one is read with pread(). */
#define BS_MAP_MAX (1ull << 30)
/* fd's file mapped in m (the mapping m holds when it is this file at
 * this size), or NULL: read it with pread().  backed: its bytes in
 * memory now (st_blocks); fewer than at the last reading (a hole
 * punched), and no page is known to hold data any more. */
bs_file_map_t *bs_map_(bs_file_map_t *m, int fd, uint64_t dev, uint64_t ino, uint64_t size, uint64_t backed);
void bs_unmap_(bs_file_map_t *m);

/* A file descriptor as a source: a regular file (work zeroed); st: its
 * fstat() already taken, or NULL. */
int bs_src_fd_(int fd, const struct stat *st, bs_src_t *s, bs_read_work_t *work, char *err, size_t errlen);
/* The header, as a segment of this layout and byte order has it. */
int bs_read_header_(const bs_src_t *s, struct bs_header *h, char *err, size_t errlen);
/* The segment's description, read within its budget, parsed (or found
 * among the layouts parsed before): a reference, or NULL with err. */
bs_layout_t *bs_read_layout_(const bs_src_t *s, const struct bs_header *h, char *err, size_t errlen);

/* A row of map m, its old cells (NULL: a new row) and new ones (the
 * map's cells), native cells starting at file offset `base`: the native
 * cells of every value's classic buckets whose count changed (all: every
 * bucket that has counted) read, compared with had[] (per value, as last
 * read) into next[] (their memory reused; n BS_NATIVE_UNCHANGED: nothing
 * read, had[] stands), each change appended to ch.  0, or -1 with err. */
#define BS_NATIVE_UNCHANGED UINT32_MAX
#define BS_NATIVE_DELTAS (UINT32_MAX - 1) /* only counts changed: bs_native_apply_ adds ch's deltas to had */
int bs_native_row_(const bs_src_t *s, const bs_lmap_t *m, const bs_layout_t *l, uint64_t base,
                   const uint64_t *old, const uint64_t *cells, int all, const bs_native_cells_t *had,
                   bs_native_cells_t *next, bs_changes_t *ch, char *err, size_t errlen);
void bs_native_cells_free_(bs_native_cells_t *c);
/* The n changes x of value v added to had, whose cells they all name. */
void bs_native_apply_(bs_native_cells_t *had, const bs_native_change_t *x, size_t n, uint32_t v);

#endif /* BILLING_STATS_READ_SRC_H */
