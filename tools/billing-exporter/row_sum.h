/*
 * row_sum.h -- stats rows summed by label set: each stats target's label
 * sets, every segment's counts added to theirs (stats_sums.c), so the
 * snapshot's work follows the distinct label sets, not the number of
 * processes.
 */
#ifndef BX_ROW_SUM_H
#define BX_ROW_SUM_H

#include <stddef.h>
#include <stdint.h>

#include "stats_read.h"

typedef struct bx_row_sum {
	bs_read_row_t *rows; /* one per label set, in the order first placed */
	size_t count, cap;
	/* Each row's native buckets (stats_read.h), native_cells of them at
	 * native[i * native_cells]; set native_cells before the first use. */
	uint64_t *native;
	size_t native_cells;
	uint32_t *refs; /* per row: the segments' rows placed there (0: none counts in it now) */
	/* per row: its labels as the exporter admitted them (labels.c: an
	 * admitted value or "other" stays so), NULL until first served */
	const char *(*admitted)[BX_MAX_FIELDS];
	uint32_t *index; /* open addressing: a row's position + 1, 0 empty; a power of two entries */
	size_t nindex;
} bx_row_sum_t;

/* Room for n more label sets, so the next n places cannot fail: 0, or -1
 * when out of memory (nothing changed). */
int bx_row_sum_reserve(bx_row_sum_t *t, size_t n);
/* The place of row's label set (a new row, its cells, native cells and
 * refs zero, on first sight).  Call only within reserved room. */
size_t bx_row_sum_place(bx_row_sum_t *t, const bs_read_row_t *row);
/* Row i's native cells (NULL when the rows have none). */
static inline uint64_t *bx_row_native(const bx_row_sum_t *t, size_t i)
{
	return t->native_cells ? t->native + i * t->native_cells : NULL;
}
void bx_row_sum_free(bx_row_sum_t *t);

#endif /* BX_ROW_SUM_H */
