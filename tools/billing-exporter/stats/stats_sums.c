/*
 * stats_sums.c -- each stats target's label sets, summed (stats_state.h):
 * a segment's reading adds what changed since its last one (lib/
 * stats_read.h: bs_changes_t), so a scrape's work follows what changed,
 * not the segments, and memory holds the label sets served, not every
 * segment's cells.  Served to the snapshot as the BPF maps' rows are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map_row.h"
#include "stats_state.h"

void bx_sums_places_free(seg_places_t **p)
{
	for (int m = 0; *p && m < BX_MAP_COUNT; m++)
		free((*p)->at[m]);
	free(*p);
	*p = NULL;
}

void bx_sums_free(bx_sums_t *sums)
{
	for (int m = 0; m < BX_MAP_COUNT; m++)
		bx_row_sum_free(&sums->map[m]);
}

/* The rows of s's reading that have no place yet placed (their label
 * sets found or made); 0, or -1 when out of memory (those placed so far
 * stay, with no counts). */
static int place_new_rows(stats_target_t *t, seg_t *s)
{
	const bs_segment_t *rd = s->reading;
	if (!s->places && !(s->places = calloc(1, sizeof *s->places)))
		return -1;
	for (int m = 0; m < BX_MAP_COUNT; m++) {
		size_t n = rd->nrows[m], had = s->places->n[m];
		if (n <= had)
			continue;
		uint32_t *at = realloc(s->places->at[m], n * sizeof *at);
		if (!at)
			return -1;
		s->places->at[m] = at;
		if (bx_row_sum_reserve(&t->sums.map[m], n - had) != 0)
			return -1;
		for (; s->places->n[m] < n; s->places->n[m]++) {
			size_t r = s->places->n[m], i = bx_row_sum_place(&t->sums.map[m], bs_row(rd, m, r));
			at[r] = (uint32_t)i;
			t->sums.map[m].refs[i]++;
			/* a writer with native buckets off counts values no native cell holds */
			t->sums.map[m].native_lost[i] |= !rd->has_native;
		}
	}
	return 0;
}

/* Each change of s's last reading, of a row placed, added to the sums. */
static void add_changes(stats_target_t *t, const seg_t *s)
{
	const bs_segment_t *rd = s->reading;
	for (size_t k = 0; k < rd->changes.nrows; k++) {
		const bs_row_change_t *x = &rd->changes.rows[k];
		int m = rd->layout->maps[x->sm].build_map;
		if (m < 0 || x->row >= s->places->n[m])
			continue; /* a map of another shape: foreign_families.c serves it from the reading */
		bx_row_sum_t *sum = &t->sums.map[m];
		uint32_t at = s->places->at[m][x->row];
		uint64_t *restrict cells = bx_row_cells(sum, at);
		const uint64_t *restrict add = x->cells;
		size_t c = 0, n = billing_stats_maps_[m].cells;
		for (; c + 4 <= n; c += 4) { /* four at a time: the loop a compiler can widen */
			cells[c] += add[c];
			cells[c + 1] += add[c + 1];
			cells[c + 2] += add[c + 2];
			cells[c + 3] += add[c + 3];
		}
		for (; c < n; c++)
			cells[c] += add[c];
		uint64_t *native = bx_row_native(sum, at);
		for (uint32_t i = 0; native && i < x->native_count; i++) {
			const bs_native_change_t *n = &rd->changes.natives[x->native_first + i];
			native[rd->layout->maps[x->sm].values[n->value].native + n->cell] += n->delta;
		}
	}
}

/* sign * each placed row's cells and native cells of s's reading into
 * the sums (sign -1: taken out); with `changes`, each change's added back
 * (what the reading held before it). */
static void apply_whole(stats_target_t *t, seg_t *s, uint64_t sign, int changes)
{
	const bs_segment_t *rd = s->reading;
	if (!s->places)
		return;
	for (int m = 0; m < BX_MAP_COUNT; m++) {
		size_t cells = billing_stats_maps_[m].cells, sm = (size_t)rd->build_sm[m];
		bx_row_sum_t *sum = &t->sums.map[m];
		for (size_t r = 0; r < s->places->n[m]; r++) {
			uint64_t *dst = bx_row_cells(sum, s->places->at[m][r]);
			const uint64_t *src = bs_row_cells(rd, m, r);
			for (size_t c = 0; c < cells; c++)
				dst[c] += sign * src[c];
			uint64_t *native = bx_row_native(sum, s->places->at[m][r]);
			const bs_native_cells_t *nc = &rd->natives[(rd->first_row[m] + r) * BS_LAYOUT_VALUES];
			for (size_t v = 0; native && rd->has_native && v < rd->layout->maps[sm].nvalues; v++)
				for (uint32_t i = 0; i < nc[v].n; i++)
					native[rd->layout->maps[sm].values[v].native + nc[v].c[i].cell] += sign * nc[v].c[i].count;
		}
	}
	if (changes)
		add_changes(t, s);
}

/* s's places let go: their label sets no longer counted by it. */
static void drop_places(stats_target_t *t, seg_t *s)
{
	for (int m = 0; s->places && m < BX_MAP_COUNT; m++)
		for (size_t r = 0; r < s->places->n[m]; r++)
			t->sums.map[m].refs[s->places->at[m][r]]--;
	bx_sums_places_free(&s->places);
}

int bx_sums_add(stats_target_t *t, seg_t *s)
{
	bs_segment_t *rd = s->reading;
	if (rd->changes.fresh) /* a new generation: the old one's rows stay counted, these start afresh */
		bx_sums_places_free(&s->places);
	size_t placed[BX_MAP_COUNT];
	for (int m = 0; m < BX_MAP_COUNT; m++)
		placed[m] = s->places ? s->places->n[m] : 0;
	if (place_new_rows(t, s) != 0) {
		/* What the rows placed before this reading had added is taken out
		 * (their cells now, less this reading's changes), the new places
		 * let go: the next reading, afresh, adds it all again. */
		for (int m = 0; s->places && m < BX_MAP_COUNT; m++) {
			for (size_t r = placed[m]; r < s->places->n[m]; r++)
				t->sums.map[m].refs[s->places->at[m][r]]--;
			s->places->n[m] = placed[m];
		}
		apply_whole(t, s, (uint64_t)-1, 1);
		drop_places(t, s);
		bs_segment_forget(rd);
		bx_error("%s: out of memory: its counts are read again afresh next time", s->path);
		return -1;
	}
	add_changes(t, s);
	return 0;
}

void bx_sums_natives_lost(stats_target_t *t, const seg_t *s)
{
	const bs_segment_t *rd = s->reading;
	for (int m = 0; s->places && rd && rd->natives_behind && m < BX_MAP_COUNT; m++)
		for (size_t r = 0; r < s->places->n[m]; r++)
			if (rd->recheck[rd->first_row[m] + r])
				t->sums.map[m].native_lost[s->places->at[m][r]] = 1;
}

void bx_sums_take_out(stats_target_t *t, seg_t *s)
{
	if (s->reading && s->reading->layout)
		apply_whole(t, s, (uint64_t)-1, 0);
	drop_places(t, s);
}

/* --- served ---------------------------------------------------------------------- */

/* Histograms: the count is the sum of the buckets.  A writer adds a
 * bucket and the count in two stores; a reading between them must not
 * publish a histogram whose +Inf bucket differs from its _count. */
static void whole_histograms(size_t mi, uint64_t *cells)
{
	const bx_map_desc_t *m = &bx_maps[mi];
	for (size_t q = 0; q < m->nquantities; q++) {
		uint64_t *c = cells + m->quantities[q].cell, sum = 0;
		for (size_t b = 0; b <= bx_quantities[m->quantities[q].quantity].nbounds; b++)
			sum += c[2 + b];
		c[0] = sum;
	}
}

/* Label set i of sum as a snapshot row: labels admitted under the
 * exporter's cap (once: an admitted value or "other" stays so), ints for
 * outcomes and filters, whole histograms. */
static int add_row(size_t mi, bx_row_sum_t *sum, size_t i, bx_label_slot_t *slots, bx_rows_t *rows)
{
	const bx_map_desc_t *m = &bx_maps[mi];
	const bs_read_row_t *sr = &sum->rows[i];
	const char **admitted = sum->admitted[i];
	char buf[BX_LABEL_TEXT];
	struct bx_row *row = bx_rows_add(rows);
	if (!row)
		return -1;
	for (size_t f = 0; f < m->nfields; f++) {
		if (sr->state[f] != BS_FIELD_VALUE) {
			row->labels[f] = BX_LABEL_OTHER;
			row->ints[f] = 1;
			continue;
		}
		row->ints[f] = m->fields[f].kind == BX_KEY_STRING ? 0 : sr->ints[f];
		if (admitted[0]) {
			row->labels[f] = admitted[f];
			continue;
		}
		bx_label_text(m->fields[f].kind == BX_KEY_STRING ? sr->text[f] : NULL, sizeof sr->text[f], sr->ints[f], buf);
		row->labels[f] = bx_label_admit(&slots[f], m->fields[f].known, m->fields[f].nknown, buf);
	}
	if (!admitted[0] && m->nfields)
		memcpy(admitted, row->labels, m->nfields * sizeof *admitted);
	memcpy(row->cells, bx_row_cells(sum, i), sizeof row->cells);
	whole_histograms(mi, row->cells);
	row->native = sum->native_lost[i] ? NULL : bx_row_native(sum, i);
	return 0;
}

/* Map mi's rows of every stats target: each target's label sets that a
 * segment has counted in, summed already. */
int bx_stats_rows(bx_stats_t *stats, size_t mi, bx_label_slot_t *slots, bx_rows_t *rows)
{
	for (size_t i = 0; stats && i < stats->count; i++) {
		bx_row_sum_t *sum = &stats->targets[i].sums.map[mi];
		for (size_t r = 0; r < sum->count; r++)
			if (sum->refs[r] && add_row(mi, sum, r, slots, rows) != 0)
				return -1;
	}
	return 0;
}

int bx_stats_each_reading(bx_stats_t *stats, bx_reading_fn fn, void *ctx)
{
	uint64_t kept_said[BS_LAYOUT_FAMILIES / 64];
	int rc = 0;
	for (size_t i = 0; stats && rc == 0 && i < stats->count; i++) {
		stats_target_t *t = &stats->targets[i];
		for (size_t k = 0; rc == 0 && k < t->nsegs; k++)
			if (t->segs[k]->reading && t->segs[k]->reading->layout && t->segs[k]->stage != SEG_ELSEWHERE)
				rc = fn(ctx, t->segs[k]->path, t->segs[k]->reading, t->segs[k]->families_said);
		for (size_t k = 0; rc == 0 && k < t->nkept; k++) {
			memset(kept_said, 0xff, sizeof kept_said); /* said while it was present */
			rc = fn(ctx, t->label, t->kept[k], kept_said);
		}
	}
	return rc;
}
