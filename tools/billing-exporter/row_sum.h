/*
 * row_sum.h -- stats rows summed by label set: the final readings of
 * segments that are gone, and every segment of a target summed before
 * the snapshot sees them, so the snapshot's work follows the distinct
 * label sets, not the number of processes.
 */
#ifndef BX_ROW_SUM_H
#define BX_ROW_SUM_H

#include <stddef.h>
#include <stdint.h>

#include "stats_read.h"

typedef struct bx_row_sum {
	bs_read_row_t *rows; /* one per label set, in the order first added */
	size_t count, cap;
	/* Each row's native buckets (stats_read.h), native_cells of them at
	 * native[i * native_cells]; set native_cells before the first use. */
	uint64_t *native;
	size_t native_cells;
	uint32_t *index; /* open addressing: a row's position + 1, 0 empty; a power of two entries */
	size_t nindex;
} bx_row_sum_t;

/* Room for n more label sets, so the next n adds cannot fail: 0, or -1
 * when out of memory (nothing changed). */
int bx_row_sum_reserve(bx_row_sum_t *t, size_t n);
/* Add row's cells, and its native cells (NULL: none), to its label set's
 * row (a new one on first sight).  Call only within reserved room. */
void bx_row_sum_add(bx_row_sum_t *t, const bs_read_row_t *row, const uint64_t *native);
/* The place of row's label set (a new row, its cells zero, on first
 * sight).  Call only within reserved room. */
size_t bx_row_sum_place(bx_row_sum_t *t, const bs_read_row_t *row);
/* dst's first n cells += src's. */
void bx_row_cells_add(bs_read_row_t *dst, const bs_read_row_t *src, size_t n);
/* Row i's native cells += native's (NULL: nothing). */
void bx_row_native_add(bx_row_sum_t *t, size_t i, const uint64_t *native);
/* Row i's native cells (NULL when the rows have none). */
static inline uint64_t *bx_row_native(const bx_row_sum_t *t, size_t i)
{
	return t->native_cells ? t->native + i * t->native_cells : NULL;
}
/* Empty, the memory kept for the next use. */
void bx_row_sum_clear(bx_row_sum_t *t);
void bx_row_sum_free(bx_row_sum_t *t);

#endif /* BX_ROW_SUM_H */
