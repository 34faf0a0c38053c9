/*
 * stats_read_native.c -- a row's native cells, read per classic bucket
 * whose count changed (stats_read.h).  A value's native cell is added
 * before its classic bucket (BS_FLAG_NATIVE_FIRST), so a bucket's count
 * that did not change since the last reading says its native cells did
 * not either, and one that did says which cells may have: the native
 * cells its values fall in (stats_layout.h: native_from .. native_to).
 * Only those are read, and kept sparse.
 */
#include <stdlib.h>
#include <string.h>

#include "stats_read_src.h"

#define NEAR 8       /* cells apart that two ranges of a value are looked at as one */
#define READ_NEAR 64 /* cells (512 bytes) apart that two of a row's ranges are read by one pread */

typedef struct range {
	uint32_t from, to; /* inclusive */
} range_t;

static int by_from(const void *a, const void *b)
{
	const range_t *x = a, *y = b;
	return x->from < y->from ? -1 : x->from > y->from;
}

/* A scratch row of native cells: one thread reads at a time. */
static uint64_t *dense;
static size_t dense_cap;

/* ranges [0, n) of the row joined where they are at most `near` cells
 * apart (sorted first); how many are left */
static size_t join(range_t *r, size_t n, uint32_t near)
{
	size_t joined = 0, sorted = 1;
	for (size_t k = 1; k < n && sorted; k++)
		sorted = r[k - 1].from <= r[k].from;
	if (!sorted) /* bucket by bucket, value by value: seldom */
		qsort(r, n, sizeof *r, by_from);
	for (size_t k = 0; k < n; k++) {
		if (joined && r[k].from <= r[joined - 1].to + 1 + near) {
			if (r[k].to > r[joined - 1].to)
				r[joined - 1].to = r[k].to;
		} else {
			r[joined++] = r[k];
		}
	}
	return joined;
}

/* The cells of q to read: those of each classic bucket whose count
 * changed (all: that has counted), sorted, near ones joined.  old and
 * cells are the value's cells (count, sum, buckets); old NULL: zeros. */
static size_t ranges_of(const bs_lquantity_t *q, const uint64_t *old, const uint64_t *cells, int all, range_t *out)
{
	size_t n = 0;
	for (size_t k = 0; k <= q->nbounds; k++) {
		uint64_t was = old ? old[2 + k] : 0, now = cells[2 + k];
		if (all ? (was | now) == 0 : was == now)
			continue;
		out[n++] = (range_t){ q->native_from[k], q->native_to[k] };
		if (q->native_below[k])
			out[n++] = (range_t){ (uint32_t)q->nnative + 1, (uint32_t)q->nnative + 1 };
	}
	return join(out, n, NEAR);
}

static int room(bs_native_cells_t *c, size_t n)
{
	if (n <= c->cap)
		return 0;
	if (n < 2 * (size_t)c->cap)
		n = 2 * (size_t)c->cap;
	bs_native_cell_t *more = realloc(c->c, n * sizeof *more);
	if (!more)
		return -1;
	c->c = more;
	c->cap = (uint32_t)n;
	return 0;
}

static int change(bs_changes_t *ch, uint32_t value, uint32_t cell, uint64_t delta)
{
	if (ch->nnatives == ch->natives_cap) {
		size_t cap = ch->natives_cap ? 2 * ch->natives_cap : 256;
		bs_native_change_t *more = realloc(ch->natives, cap * sizeof *more);
		if (!more)
			return -1;
		ch->natives = more;
		ch->natives_cap = cap;
	}
	ch->natives[ch->nnatives++] = (bs_native_change_t){ value, cell, delta };
	return 0;
}

/* Whether the 4 cells at p are all zero. */
static inline int zero4(const uint64_t *p)
{
	return (p[0] | p[1] | p[2] | p[3]) == 0;
}

/* The first of c's cells at or after cell. */
static uint32_t lower(const bs_native_cells_t *c, uint32_t cell)
{
	uint32_t lo = 0, hi = c->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->c[mid].cell < cell)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Value v's cells in the ranges (dense[cell], as read) against had: each
 * difference a change.  When
 * only counts changed, next says so (BS_NATIVE_DELTAS: the commit adds
 * them to had); when a cell was added or emptied, next is had with the
 * changes, built here (no cell is read twice). */
static int merge(const bs_native_cells_t *had, const range_t *r, size_t nr, const uint64_t *dense, uint32_t v,
                 bs_native_cells_t *next, bs_changes_t *ch)
{
	size_t first = ch->nnatives;
	int reshaped = 0;
	for (size_t k = 0; k < nr; k++) {
		uint32_t i = lower(had, r[k].from), c = r[k].from;
		while (c <= r[k].to) {
			/* up to had's next cell every cell was zero: four at a time
			 * while they still are */
			uint32_t stop = i < had->n && had->c[i].cell <= r[k].to ? had->c[i].cell : r[k].to + 1;
			for (; c < stop; c++) {
				if (stop - c >= 4 && zero4(&dense[c])) {
					c += 3;
					continue;
				}
				uint64_t now = dense[c];
				if (now && change(ch, v, c, now) != 0)
					return -1;
				reshaped |= now != 0;
			}
			if (c > r[k].to)
				break;
			uint64_t was = had->c[i++].count, now = dense[c];
			if (now != was && change(ch, v, c, now - was) != 0)
				return -1;
			reshaped |= now == 0;
			c++;
		}
	}
	size_t n = ch->nnatives - first, i = 0, j = 0;
	if (n == 0)
		return 0;
	if (!reshaped) {
		next->n = BS_NATIVE_DELTAS;
		return 0;
	}
	const bs_native_change_t *x = ch->natives + first;
	if (room(next, (size_t)had->n + n) != 0)
		return -1;
	next->n = 0;
	while (i < had->n || j < n) {
		if (j == n || (i < had->n && had->c[i].cell < x[j].cell)) {
			next->c[next->n++] = had->c[i++];
			continue;
		}
		uint64_t was = i < had->n && had->c[i].cell == x[j].cell ? had->c[i++].count : 0, now = was + x[j].delta;
		if (now)
			next->c[next->n++] = (bs_native_cell_t){ x[j].cell, now };
		j++;
	}
	return 0;
}

void bs_native_apply_(bs_native_cells_t *had, const bs_native_change_t *x, size_t n, uint32_t v)
{
	for (size_t k = 0; k < n; k++)
		if (x[k].value == v)
			had->c[lower(had, x[k].cell)].count += x[k].delta;
}

int bs_native_row_(const bs_src_t *s, const bs_lmap_t *m, const bs_layout_t *l, uint64_t base,
                   const uint64_t *old, const uint64_t *cells, int all, const bs_native_cells_t *had,
                   bs_native_cells_t *next, bs_changes_t *ch, char *err, size_t errlen)
{
	range_t r[BS_LAYOUT_VALUES][2 * (BS_LAYOUT_BOUNDS + 1)], reads[BS_LAYOUT_VALUES * 2 * (BS_LAYOUT_BOUNDS + 1)];
	size_t nr[BS_LAYOUT_VALUES], nreads = 0;
	/* the cells each value looks at again, then the reads that cover them:
	 * the row's cells are one block, values after one another */
	for (size_t v = 0; v < m->nvalues; v++) {
		const bs_lquantity_t *q = &l->quantities[m->values[v].quantity];
		size_t at = m->values[v].cell;
		nr[v] = q->nnative ? ranges_of(q, old ? old + at : NULL, cells + at, all, r[v]) : 0;
		next[v].n = BS_NATIVE_UNCHANGED;
		for (size_t k = 0; k < nr[v]; k++)
			reads[nreads++] = (range_t){ (uint32_t)m->values[v].native + r[v][k].from,
				                     (uint32_t)m->values[v].native + r[v][k].to };
	}
	if (nreads == 0)
		return 0;
	if (m->native_cells > dense_cap) {
		uint64_t *more = realloc(dense, m->native_cells * sizeof *more);
		if (!more)
			BS_FAIL("out of memory");
		dense = more;
		dense_cap = m->native_cells;
	}
	/* a mapping's lines asked for at once, not one miss after another */
	for (size_t k = 0; s->map && k < nreads; k++)
		for (uint64_t c = reads[k].from & ~7u; c <= reads[k].to && base + c * 8 < s->size; c += 8)
			__builtin_prefetch(s->map->at + base + c * 8);
	nreads = join(reads, nreads, s->map ? 0 : READ_NEAR);
	for (size_t k = 0; k < nreads; k++) {
		/* every thread adds to these atomically: each cell is read whole */
		uint64_t n = (uint64_t)(reads[k].to - reads[k].from + 1);
		if (bs_src_cells_(s, base + (uint64_t)reads[k].from * 8, dense + reads[k].from, n * 8) != 0)
			BS_FAIL("truncated in map %s's native buckets", m->name);
	}
	for (size_t v = 0; v < m->nvalues; v++)
		if (nr[v] && merge(&had[v], r[v], nr[v], dense + m->values[v].native, (uint32_t)v, &next[v], ch) != 0)
			BS_FAIL("out of memory");
	return 0;
}

void bs_native_cells_free_(bs_native_cells_t *c)
{
	free(c->c);
	memset(c, 0, sizeof *c);
}

int bs_map_native(const bs_segment_t *s, size_t sm, size_t r, uint64_t *out)
{
	const bs_lmap_t *m = s->layout ? &s->layout->maps[sm] : NULL;
	if (!m || !m->native_cells || !s->has_native)
		return 0;
	memset(out, 0, m->native_cells * sizeof *out);
	const bs_native_cells_t *c = &s->natives[(s->map_first[sm] + r) * BS_LAYOUT_VALUES];
	for (size_t v = 0; v < m->nvalues; v++)
		for (uint32_t i = 0; i < c[v].n; i++)
			out[m->values[v].native + c[v].c[i].cell] = c[v].c[i].count;
	return 1;
}
