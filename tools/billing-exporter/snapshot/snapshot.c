/*
 * snapshot.c -- every source's rows of every enabled map (the BPF maps
 * and their fold maps, the stats targets' sums), decoded into labels by
 * the sources, turned into each enabled metric's samples; then the
 * exporter's own metrics (self_metrics.c) and the families only stats
 * segments describe (foreign_families.c).
 */
#include "exporter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats_source.h"
#include "map_row.h"
#include "self_metrics.h"
#include "stats_layout.h"

/* The native buckets of histogram m's series summed from same[0, n),
 * when every one of them has them and none fell out of their range (a
 * figure that may be wrong is not served: the classic buckets still
 * are); NULL otherwise, or when out of memory. */
static const bx_native_t *native_series(bx_snapshot_t *s, const bx_metric_t *m, const bx_series_t *same, size_t n)
{
	const bs_layout_t *own = bs_layout_own();
	const bs_lmap_t *lm = &own->maps[m->map];
	const bs_lquantity_t *q = &own->quantities[lm->values[m->quantity].quantity];
	size_t at = lm->values[m->quantity].native, cells = q->nnative + 2;
	if (!q->nnative)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!same[i].native)
			return NULL;
	bx_native_t *nat = bx_snapshot_alloc(s, sizeof *nat + cells * sizeof(bx_u64));
	if (!nat)
		return NULL;
	bx_u64 *sum = (bx_u64 *)(nat + 1);
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < cells; c++)
			sum[c] += same[i].native[at + c];
	if (sum[cells - 1])
		return NULL;
	nat->schema = q->schema;
	nat->first_index = q->native_low * (1 << q->schema) + 1;
	nat->zero_threshold = ldexp(1.0, q->native_low);
	nat->nbuckets = q->nnative;
	nat->cells = sum;
	return nat;
}

static const char *label_value(const bx_label_t *l, const struct bx_row *r)
{
	switch (l->decode) {
	case BX_DEC_NONZERO: return r->ints[l->field] == 0 ? l->constant : l->if_nonzero;
	case BX_DEC_CONSTANT: return l->constant;
	case BX_DEC_VALUE: break;
	}
	return r->labels[l->field];
}

/* Metric m's series: its map's rows, and the rows of segments whose map
 * of another shape describes m alike (parts), summed per label set; their
 * native buckets too when natives. */
static int derive(bx_snapshot_t *s, const bx_metric_t *m, const bx_rows_t *rows, const bx_parts_t *parts, int natives)
{
	const bx_map_quantity_t *mq = m->source == BX_SRC_COUNT ? NULL : &bx_maps[m->map].quantities[m->quantity];
	const bx_quantity_t *q = mq ? &bx_quantities[mq->quantity] : NULL;
	size_t first = mq ? mq->cell : 0, ncells = q ? q->nbounds + 3 : 1, n = parts->n;
	bx_series_t *v = malloc((rows->count + parts->n + 1) * sizeof *v);
	if (!v)
		return -1;
	if (parts->n) /* items is NULL when there are none: memcpy's source may not be */
		memcpy(v, parts->items, parts->n * sizeof *v);
	for (size_t i = 0; i < rows->count; i++) {
		const struct bx_row *r = &rows->items[i];
		if (m->where_nonzero != BX_WHERE_ALL && r->ints[m->where_nonzero] == 0)
			continue;
		bx_series_t *x = &v[n++];
		x->n = m->nlabels;
		for (size_t l = 0; l < m->nlabels; l++)
			x->values[l] = label_value(&m->labels[l], r);
		memcpy(x->cells, r->cells + first, ncells * sizeof x->cells[0]);
		x->native = r->native;
	}
	int rc = bx_snapshot_series(s, m, q, v, n, natives ? native_series : NULL);
	free(v);
	return rc;
}

int bx_snapshot_take(bx_exporter_t *ex, bx_snapshot_t *s, int natives)
{
	bx_rows_t rows[BX_MAP_COUNT];
	int rc = 0;

	memset(s, 0, sizeof *s);
	memset(rows, 0, sizeof rows);
	bx_stats_refresh(ex->stats, natives);
	for (size_t i = 0; i < bx_map_count && rc == 0; i++)
		if (bx_maps[i].group & ex->groups)
			rc = bx_usdt_rows(&ex->usdt, i, ex->slots[i], &rows[i]) == 0 &&
			             bx_stats_rows(ex->stats, i, ex->slots[i], &rows[i]) == 0
			         ? 0
			         : -1;
	bx_foreign_t *foreign = rc == 0 ? bx_foreign_collect(ex->stats, ex->groups, s) : NULL;
	if (!foreign)
		rc = -1;
	/* Fires under "other", per label: past the label's cap (labels.c),
	 * folded in the kernel (fold maps) or in a segment. */
	for (size_t i = 0; i < bx_map_count; i++)
		for (size_t r = 0; r < rows[i].count; r++)
			for (size_t f = 0; f < bx_maps[i].nfields; f++)
				if (rows[i].items[r].labels[f] == BX_LABEL_OTHER)
					s->folded_fires[i][f] += rows[i].items[r].cells[0];
	for (size_t k = 0; k < bx_metric_count && rc == 0; k++) {
		const bx_metric_t *m = &bx_metrics[k];
		if (bx_metric_group(m) & ex->groups)
			rc = derive(s, m, &rows[m->map], bx_foreign_table_parts(foreign, m), natives);
	}
	for (size_t k = 0; k < bx_self_metric_count && rc == 0; k++)
		rc = bx_self_metrics[k].samples(ex, s, &bx_self_metrics[k].metric);
	for (size_t i = 0; i < bx_map_count; i++)
		free(rows[i].items);
	if (rc == 0)
		rc = bx_foreign_emit(foreign);
	bx_foreign_free(foreign);
	return rc;
}
