/*
 * map_row.h -- what every source hands the snapshot: a map's rows with
 * their keys decoded.  The sources (usdt_maps.c for BPF maps,
 * stats_sums.c for stats segments) fill them; snapshot.c turns rows into
 * samples.
 */
#ifndef BX_MAP_ROW_H
#define BX_MAP_ROW_H

#include <stdlib.h>
#include <string.h>

#include "metric_table.h"

/* One row of a map, from a BPF map or a stats segment: its key decoded
 * into labels, its value as 64-bit cells (metric_table.h): fires at cell
 * 0, then each quantity's count, sum and buckets.  Every cell is a sum,
 * so per-CPU copies, thread slots and rows that share labels add cell by
 * cell. */
struct bx_row {
	const char *labels[BX_MAX_FIELDS]; /* admitted values or "other" */
	long long ints[BX_MAX_FIELDS];     /* INT32 fields, raw (outcomes, filters) */
	bx_u64 cells[BX_MAX_CELLS];
	/* A stats row's native buckets (bs_map_info_t.native_cells, the
	 * source's until the snapshot is taken); NULL: none (a BPF map's). */
	const bx_u64 *native;
};

typedef struct bx_rows {
	struct bx_row *items;
	size_t count, cap;
} bx_rows_t;

/* A new row, zeroed, at the end of rows; NULL when out of memory. */
static inline struct bx_row *bx_rows_add(bx_rows_t *rows)
{
	if (rows->count == rows->cap) {
		size_t cap = rows->cap ? rows->cap * 2 : 64;
		struct bx_row *items = realloc(rows->items, cap * sizeof *items);
		if (!items)
			return NULL;
		rows->items = items;
		rows->cap = cap;
	}
	return memset(&rows->items[rows->count++], 0, sizeof *rows->items);
}

#endif /* BX_MAP_ROW_H */
