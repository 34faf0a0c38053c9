/*
 * row_sum.c -- stats rows summed by label set: each stats target's label
 * sets, every segment's counts added to theirs (stats_sums.c), so the
 * snapshot's work follows the distinct label sets, not the number of
 * processes.
 */
#include "stats_state.h"

#include <stdlib.h>
#include <string.h>

/* A row's label set is its fields' states and texts: the reader
 * zero-pads every text (stats_read.h), so whole arrays compare and hash. */
static uint64_t label_hash(const bs_read_row_t *r)
{
	uint64_t h = 0xcbf29ce484222325ull, w;
	const unsigned char *p = (const unsigned char *)r->text;
	size_t n = sizeof r->text, i;
	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	for (int f = 0; f < BX_MAX_FIELDS; f++)
		h = (h ^ (uint64_t)(unsigned)r->state[f]) * 0x100000001b3ull;
	return h ^ (h >> 32);
}

static int same_labels(const bs_read_row_t *a, const bs_read_row_t *b)
{
	return memcmp(a->state, b->state, sizeof a->state) == 0 && memcmp(a->text, b->text, sizeof a->text) == 0;
}

/* Where row's label set is in the index: its entry, or the empty one it would take. */
static uint32_t *slot_of(const bx_row_sum_t *t, const bs_read_row_t *row)
{
	size_t mask = t->nindex - 1, i = (size_t)label_hash(row) & mask;
	while (t->index[i] && !same_labels(&t->rows[t->index[i] - 1], row))
		i = (i + 1) & mask;
	return &t->index[i];
}

int bx_row_sum_reserve(bx_row_sum_t *t, size_t n)
{
	size_t need = t->count + n;
	if (need > UINT32_MAX - 1)
		return -1;
	if (need > t->cap) {
		size_t cap = t->cap ? t->cap : 16;
		while (cap < need)
			cap *= 2;
		bs_read_row_t *rows = realloc(t->rows, cap * sizeof *rows);
		if (!rows)
			return -1;
		t->rows = rows;
		uint32_t *refs = realloc(t->refs, cap * sizeof *refs);
		if (!refs)
			return -1; /* t->cap unchanged: the rows' room is not taken */
		t->refs = refs;
		const char *(*admitted)[BX_MAX_FIELDS] = realloc(t->admitted, cap * sizeof *admitted);
		if (!admitted)
			return -1;
		t->admitted = admitted;
		unsigned char *lost = realloc(t->native_lost, cap);
		if (!lost)
			return -1;
		t->native_lost = lost;
		uint64_t *cells = realloc(t->cells, cap * BX_MAX_CELLS * sizeof *cells);
		if (!cells)
			return -1;
		t->cells = cells;
		if (t->native_cells) {
			uint64_t *native = realloc(t->native, cap * t->native_cells * sizeof *native);
			if (!native)
				return -1; /* t->cap unchanged: the rows' room is not taken */
			t->native = native;
		}
		t->cap = cap;
	}
	if (need * 2 > t->nindex) { /* at most half full: short probes */
		size_t nindex = t->nindex ? t->nindex : 32;
		while (need * 2 > nindex)
			nindex *= 2;
		uint32_t *index = calloc(nindex, sizeof *index), *old = t->index;
		if (!index)
			return -1;
		t->index = index;
		t->nindex = nindex;
		for (size_t i = 0; i < t->count; i++)
			*slot_of(t, &t->rows[i]) = (uint32_t)(i + 1);
		free(old);
	}
	return 0;
}

size_t bx_row_sum_place(bx_row_sum_t *t, const bs_read_row_t *row)
{
	uint32_t *at = slot_of(t, row);
	if (!*at) {
		bs_read_row_t *n = &t->rows[t->count++];
		memcpy(n->state, row->state, sizeof n->state);
		memcpy(n->text, row->text, sizeof n->text);
		memcpy(n->ints, row->ints, sizeof n->ints);
		memset(bx_row_cells(t, t->count - 1), 0, BX_MAX_CELLS * sizeof *t->cells);
		t->refs[t->count - 1] = 0;
		t->admitted[t->count - 1][0] = NULL;
		t->native_lost[t->count - 1] = 0;
		if (t->native_cells)
			memset(bx_row_native(t, t->count - 1), 0, t->native_cells * sizeof *t->native);
		*at = (uint32_t)t->count;
	}
	return *at - 1;
}

void bx_row_sum_free(bx_row_sum_t *t)
{
	size_t native_cells = t->native_cells;
	free(t->rows);
	free(t->native);
	free(t->refs);
	free(t->admitted);
	free(t->native_lost);
	free(t->cells);
	free(t->index);
	memset(t, 0, sizeof *t);
	t->native_cells = native_cells;
}
