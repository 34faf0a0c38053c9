/*
 * snapshot.c -- read the per-CPU maps and their fold maps, decode their
 * keys into labels (the metric table says how), fold label values past the
 * cap (known values never), and derive every enabled metric's samples.
 */
#include "snapshot.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "billing_exporter.h"
#include "foreign_families.h"
#include "map_row.h"
#include "stats_layout.h"
#include "stats_segment.h"
#include "stats_source.h"

typedef struct bx_row row_t;

typedef struct rows {
	row_t *items;
	size_t count;
} rows_t;

static void add_cells(bx_u64 *dst, const bx_u64 *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

/* A key's fields as labels.  In a fold map (`folded`), a string field of
 * 0xff bytes to its end and a non-zero int field are values folded in the
 * kernel: "other" (an int one known to be non-zero). */
static void decode_key(bx_exporter_t *ex, size_t mi, const unsigned char *key, int folded, row_t *r)
{
	const bx_map_desc_t *m = &bx_maps[mi];
	char buf[4 * BX_LABEL_BYTES_MAX + 1];

	for (size_t f = 0; f < m->nfields; f++) {
		const bx_key_field_t *kf = &m->fields[f];
		if (kf->kind == BX_KEY_STRING) {
			if (folded && key[kf->offset + kf->size - 1] != 0) {
				r->labels[f] = BX_LABEL_OTHER;
				continue;
			}
			bx_label_sanitize((const char *)key + kf->offset, kf->size, buf, sizeof buf);
			r->ints[f] = 0;
		} else {
			int32_t v;
			memcpy(&v, key + kf->offset, sizeof v);
			r->ints[f] = v;
			if (folded && v != 0) {
				r->labels[f] = BX_LABEL_OTHER;
				continue;
			}
			snprintf(buf, sizeof buf, "%d", (int)v);
		}
		r->labels[f] = bx_label_admit(&ex->slots[mi][f], kf->known, kf->nknown, buf);
	}
}

/* Every row of BPF map `name` (a map or its fold map) appended to out. */
static int read_map(bx_exporter_t *ex, size_t mi, const char *name, int folded, rows_t *out)
{
	const bx_map_desc_t *m = &bx_maps[mi];
	int fd = bx_map_fd(ex, name);
	int ncpu = libbpf_num_possible_cpus();
	unsigned char key[256], next[256];
	size_t cap = out->count;

	if (fd < 0 || ncpu <= 0 || m->key_size > sizeof key)
		return -1;
	size_t ncells = m->value_size / 8;
	bx_u64 *percpu = calloc((size_t)ncpu, m->value_size);
	if (!percpu || ncells > BX_MAX_CELLS) {
		free(percpu);
		return -1;
	}
	int more = bpf_map_get_next_key(fd, NULL, next) == 0;
	while (more) {
		if (bpf_map_lookup_elem(fd, next, percpu) == 0) {
			if (out->count == cap) {
				cap = cap ? cap * 2 : 64;
				row_t *items = realloc(out->items, cap * sizeof *items);
				if (!items) {
					free(percpu);
					return -1;
				}
				out->items = items;
			}
			row_t *r = &out->items[out->count++];
			memset(r, 0, sizeof *r);
			for (int c = 0; c < ncpu; c++)
				add_cells(r->cells, percpu + (size_t)c * ncells, ncells);
			decode_key(ex, mi, next, folded, r);
		}
		memcpy(key, next, m->key_size);
		more = bpf_map_get_next_key(fd, key, next) == 0;
	}
	free(percpu);
	return 0;
}

typedef struct agg {
	size_t n;
	const char *values[BX_MAX_FIELDS];
	bx_u64 cells[BX_MAX_CELLS];
	const bx_u64 *native; /* its row's native cells (map_row.h); NULL: none */
} agg_t;

static int agg_cmp(const void *a, const void *b)
{
	const agg_t *x = a, *y = b;
	for (size_t i = 0; i < x->n; i++) {
		int c = strcmp(x->values[i], y->values[i]);
		if (c)
			return c;
	}
	return 0;
}

static const char *label_value(const bx_label_t *l, const row_t *r)
{
	switch (l->decode) {
	case BX_DEC_NONZERO: return r->ints[l->field] == 0 ? l->constant : l->if_nonzero;
	case BX_DEC_CONSTANT: return l->constant;
	case BX_DEC_VALUE: break;
	}
	return r->labels[l->field];
}

/* A sum cell in the quantity's unit: two's complement when signed. */
static double sum_value(const bx_quantity_t *q, bx_u64 sum)
{
	double v = q->is_signed ? (double)(int64_t)sum : (double)sum;
	return q->divide == 1.0 ? v : v / q->divide;
}

/* The native buckets of histogram m's series summed from aggs[0, n), when
 * every one of them has them and none fell out of their range (a figure
 * that may be wrong is not served: the classic buckets still are); NULL
 * otherwise, or when out of memory. */
static const bx_native_t *native_series(bx_snapshot_t *s, const bx_metric_t *m, const agg_t *aggs, size_t n)
{
	const bs_layout_t *own = bs_layout_own();
	const bs_lmap_t *lm = &own->maps[m->map];
	const bs_lquantity_t *q = &own->quantities[lm->values[m->quantity].quantity];
	size_t at = lm->values[m->quantity].native, cells = q->nnative + 2;
	if (!q->nnative)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!aggs[i].native)
			return NULL;
	bx_native_t *nat = bx_snapshot_alloc(s, sizeof *nat + cells * sizeof(bx_u64));
	if (!nat)
		return NULL;
	bx_u64 *sum = (bx_u64 *)(nat + 1);
	for (size_t i = 0; i < n; i++)
		add_cells(sum, aggs[i].native + at, cells);
	if (sum[cells - 1])
		return NULL;
	nat->schema = q->schema;
	nat->first_index = q->native_low * (1 << q->schema) + 1;
	nat->zero_threshold = ldexp(1.0, q->native_low);
	nat->nbuckets = q->nnative;
	nat->cells = sum;
	return nat;
}

static int emit_series(bx_snapshot_t *s, const bx_metric_t *m, const agg_t *a, const bx_native_t *native)
{
	const bx_u64 *c = a->cells;
#define LABELS(x) \
  do { \
    if (!(x)) return -1; \
    for (size_t i_ = 0; i_ < m->nlabels; i_++) \
      bx_sample_label((x), m->labels[i_].name, a->values[i_]); \
  } while (0)
	bx_sample_t *x;

	if (m->source == BX_SRC_COUNT) {
		x = bx_snapshot_add(s, m, "", (double)c[0]);
		LABELS(x);
		return 0;
	}
	if (m->source != BX_SRC_SUM && m->source != BX_SRC_HIST)
		return -1;
	const bx_map_quantity_t *mq = &bx_maps[m->map].quantities[m->quantity];
	const bx_quantity_t *q = &bx_quantities[mq->quantity];
	const bx_u64 *qc = c + mq->cell; /* count, sum, buckets */
	if (m->source == BX_SRC_SUM) {
		x = bx_snapshot_add(s, m, "", sum_value(q, qc[1]));
		LABELS(x);
		return 0;
	}
	double cumulative = 0;
	for (size_t b = 0; b <= q->nbounds; b++) {
		cumulative += (double)qc[2 + b];
		x = bx_snapshot_add(s, m, "_bucket", cumulative);
		LABELS(x);
		bx_sample_label(x, "le", b < q->nbounds ? q->le[b] : "+Inf");
	}
	x = bx_snapshot_add(s, m, "_sum", sum_value(q, qc[1]));
	LABELS(x);
	x = bx_snapshot_add(s, m, "_count", (double)qc[0]);
	LABELS(x);
	x->native = native;
	return 0;
#undef LABELS
}

/* Metric m's series: its map's rows, and the rows of segments whose map
 * of another shape describes m alike (parts), summed per label set; their
 * native buckets too when natives. */
static int derive(bx_snapshot_t *s, const bx_metric_t *m, const rows_t *rows, const bx_parts_t *parts, int natives)
{
	agg_t *aggs = calloc(rows->count + parts->n + 1, sizeof *aggs);
	size_t n = 0;
	int rc = 0;

	if (!aggs)
		return -1;
	size_t first = m->source == BX_SRC_COUNT ? 0 : bx_maps[m->map].quantities[m->quantity].cell;
	for (size_t i = 0; i < parts->n; i++) {
		agg_t *a = &aggs[n++];
		a->n = m->nlabels;
		memcpy(a->values, parts->items[i].values, sizeof a->values);
		size_t ncells = m->source == BX_SRC_COUNT
		                    ? 1
		                    : bx_quantities[bx_maps[m->map].quantities[m->quantity].quantity].nbounds + 3;
		memcpy(a->cells + first, parts->items[i].cells, ncells * sizeof a->cells[0]);
	}
	for (size_t i = 0; i < rows->count; i++) {
		const row_t *r = &rows->items[i];
		if (m->where_nonzero != BX_WHERE_ALL && r->ints[m->where_nonzero] == 0)
			continue;
		agg_t *a = &aggs[n++];
		a->n = m->nlabels;
		for (size_t l = 0; l < m->nlabels; l++)
			a->values[l] = label_value(&m->labels[l], r);
		memcpy(a->cells, r->cells, sizeof a->cells);
		a->native = r->native;
	}
	qsort(aggs, n, sizeof *aggs, agg_cmp);
	for (size_t i = 0; i < n && rc == 0;) {
		agg_t merged = aggs[i];
		size_t j = i + 1;
		for (; j < n && agg_cmp(&aggs[i], &aggs[j]) == 0; j++)
			add_cells(merged.cells, aggs[j].cells, BX_MAX_CELLS);
		rc = emit_series(s, m, &merged,
		                 natives && m->source == BX_SRC_HIST ? native_series(s, m, &aggs[i], j - i) : NULL);
		i = j;
	}
	free(aggs);
	return rc;
}

/* --- the exporter's own metrics ----------------------------------------- */

static int by_text(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What USDT target t carries: its distinct billing probes, and a hash of
 * their names (FNV-1a 64, sorted, one a line): two targets with the same
 * hash carry the same probes. */
static size_t usdt_probe_set(const bx_target_t *t, uint64_t *hash)
{
	size_t n = 0, cap = 0;
	for (size_t k = 0; k < t->module_count; k++)
		cap += t->modules[k].probe_count;
	const char **names = cap ? malloc(cap * sizeof *names) : NULL;
	for (size_t k = 0; names && k < t->module_count; k++)
		for (size_t p = 0; p < t->modules[k].probe_count; p++)
			names[n++] = t->modules[k].probes[p];
	if (n)
		qsort(names, n, sizeof *names, by_text);
	size_t distinct = 0;
	*hash = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(names[i], names[i - 1]) == 0)
			continue;
		distinct++;
		for (const char *c = names[i]; *c; c++)
			*hash = (*hash ^ (unsigned char)*c) * 1099511628211ull;
		*hash = (*hash ^ '\n') * 1099511628211ull;
	}
	free(names);
	return distinct;
}

static int probe_set_sample(bx_snapshot_t *s, const bx_metric_t *m, const char *target, const char *source,
                            uint64_t hash, size_t probes)
{
	char h[17], count[24], buf[4 * PATH_MAX + 1];
	snprintf(h, sizeof h, "%016llx", (unsigned long long)hash);
	snprintf(count, sizeof count, "%zu", probes);
	bx_label_sanitize(target, strlen(target), buf, sizeof buf);
	bx_sample_t *x = bx_snapshot_add(s, m, "", 1);
	return x && bx_sample_label(x, "target", bx_snapshot_own(s, buf)) == 0 &&
	               bx_sample_label(x, "source", source) == 0 && bx_sample_label(x, "probe_set", bx_snapshot_own(s, h)) == 0 &&
	               bx_sample_label(x, "probes", bx_snapshot_own(s, count)) == 0
	           ? 0
	           : -1;
}

/* billing_exporter_target_build_info: what each target runs (metric_table.c). */
static int probe_sets(bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	for (size_t t = 0; t < ex->target_count; t++) {
		uint64_t hash;
		size_t probes = usdt_probe_set(&ex->targets[t], &hash);
		if (probe_set_sample(s, m, ex->targets[t].label, "usdt", hash, probes) != 0)
			return -1;
	}
	for (size_t t = 0; t < bx_stats_target_count(ex); t++) {
		uint64_t hash[16];
		size_t probes[16], n = bx_stats_target_probe_sets(ex, t, hash, probes, 16);
		for (size_t i = 0; i < n && i < 16; i++)
			if (probe_set_sample(s, m, bx_stats_target_label(ex, t), "stats", hash[i], probes[i]) != 0)
				return -1;
	}
	return 0;
}

static int self_metric(bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	const char *n = m->name + strlen("billing_exporter_");
	bx_sample_t *x;

	if (strcmp(n, "target_build_info") == 0)
		return probe_sets(ex, s, m);
	if (strcmp(n, "build_info") == 0) {
		char h[17];
		size_t len = strlen(billing_stats_desc_);
		snprintf(h, sizeof h, "%016llx", (unsigned long long)bs_desc_hash(billing_stats_desc_, len));
		x = bx_snapshot_add(s, m, "", 1);
		return x && bx_sample_label(x, "version", BILLING_EXPORTER_VERSION) == 0 &&
		               bx_sample_label(x, "probe_set", bx_snapshot_own(s, h)) == 0
		           ? 0
		           : -1;
	}

	if (strcmp(n, "target_up") == 0) {
		for (size_t t = 0; t < ex->target_count; t++) {
			char buf[4 * sizeof ex->targets[t].label + 1];
			bx_label_sanitize(ex->targets[t].label, sizeof ex->targets[t].label, buf, sizeof buf);
			x = bx_snapshot_add(s, m, "", bx_target_alive(&ex->targets[t]));
			if (bx_sample_label(x, "target", bx_snapshot_own(s, buf)) != 0)
				return -1;
		}
		for (size_t t = 0; t < bx_stats_target_count(ex); t++) {
			char buf[4 * PATH_MAX + 1];
			const char *label = bx_stats_target_label(ex, t);
			bx_label_sanitize(label, strlen(label), buf, sizeof buf);
			x = bx_snapshot_add(s, m, "", bx_stats_target_up(ex, t));
			if (bx_sample_label(x, "target", bx_snapshot_own(s, buf)) != 0)
				return -1;
		}
		return 0;
	}
	if (strcmp(n, "target_source") == 0) {
		/* Which path feeds each target: usdt (BPF) or stats (segment). */
		for (size_t t = 0; t < ex->target_count + bx_stats_target_count(ex); t++) {
			int st = t >= ex->target_count;
			const char *label = st ? bx_stats_target_label(ex, t - ex->target_count) : ex->targets[t].label;
			char buf[4 * PATH_MAX + 1];
			bx_label_sanitize(label, strlen(label), buf, sizeof buf);
			x = bx_snapshot_add(s, m, "", 1);
			if (bx_sample_label(x, "target", bx_snapshot_own(s, buf)) != 0 || bx_sample_label(x, "source", st ? "stats" : "usdt") != 0)
				return -1;
		}
		return 0;
	}
	if (strcmp(n, "stats_segments_skipped") == 0) {
		for (int r = BX_SKIP_NONE + 1; r < BX_SKIP_COUNT; r++) {
			x = bx_snapshot_add(s, m, "", (double)bx_stats_skipped(ex, r));
			if (bx_sample_label(x, "reason", bx_skip_reasons[r]) != 0)
				return -1;
		}
		return 0;
	}
	if (strcmp(n, "scrape_duration_seconds") == 0)
		return bx_snapshot_add(s, m, "", ex->last_scrape_seconds) ? 0 : -1;

	uint64_t dropped[BX_MAP_COUNT] = { 0 };
	if (strcmp(n, "dropped_fires_total") == 0) {
		int fd = bx_map_fd(ex, "m_dropped"), ncpu = libbpf_num_possible_cpus();
		uint64_t *percpu = ncpu > 0 ? calloc((size_t)ncpu, sizeof *percpu) : NULL;
		for (uint32_t slot = 0; percpu && fd >= 0 && slot < BX_MAP_COUNT; slot++)
			if (bpf_map_lookup_elem(fd, &slot, percpu) == 0)
				for (int c = 0; c < ncpu; c++)
					dropped[slot] += percpu[c];
		free(percpu);
	}
	for (size_t i = 0; i < bx_map_count; i++) {
		const bx_map_desc_t *md = &bx_maps[i];
		if (!(md->group & ex->groups))
			continue;
		if (strcmp(n, "probes_attached") == 0) {
			x = bx_snapshot_add(s, m, "", (double)ex->attached[i]);
			if (bx_sample_label(x, "probe", md->probe) != 0)
				return -1;
		} else if (strcmp(n, "label_values_folded_total") == 0) {
			for (size_t f = 0; f < md->nfields; f++) {
				x = bx_snapshot_add(s, m, "", (double)ex->slots[i][f].folded_count);
				if (bx_sample_label(x, "map", md->map) != 0 || bx_sample_label(x, "label", md->fields[f].arg) != 0)
					return -1;
			}
		} else if (strcmp(n, "folded_fires_total") == 0) {
			for (size_t f = 0; f < md->nfields; f++) {
				x = bx_snapshot_add(s, m, "", (double)s->folded_fires[i][f]);
				if (bx_sample_label(x, "map", md->map) != 0 || bx_sample_label(x, "label", md->fields[f].arg) != 0)
					return -1;
			}
		} else if (strcmp(n, "dropped_fires_total") == 0) {
			x = bx_snapshot_add(s, m, "", (double)dropped[i]);
			if (bx_sample_label(x, "map", md->map) != 0)
				return -1;
		} else {
			struct bpf_prog_info info;
			uint32_t len = sizeof info;
			int fd = bx_prog_fd(ex, md->probe);
			memset(&info, 0, sizeof info);
			if (fd >= 0)
				bpf_obj_get_info_by_fd(fd, &info, &len);
			double value = strcmp(n, "bpf_program_runs_total") == 0          ? (double)info.run_cnt
			               : strcmp(n, "bpf_program_run_seconds_total") == 0 ? (double)info.run_time_ns / 1e9
			                                                                 : (double)info.recursion_misses;
			x = bx_snapshot_add(s, m, "", value);
			if (bx_sample_label(x, "program", md->probe) != 0)
				return -1;
		}
	}
	return 0;
}

int bx_snapshot_take(bx_exporter_t *ex, bx_snapshot_t *s, int natives)
{
	rows_t rows[BX_MAX_MAPS];
	int rc = 0;

	memset(s, 0, sizeof *s);
	memset(rows, 0, sizeof rows);
	bx_stats_refresh(ex);
	for (size_t i = 0; i < bx_map_count && rc == 0; i++) {
		if (!(bx_maps[i].group & ex->groups))
			continue;
		if (ex->skel)
			rc = read_map(ex, i, bx_maps[i].map, 0, &rows[i]);
		if (ex->skel && rc == 0)
			rc = read_map(ex, i, bx_maps[i].fold_map, 1, &rows[i]);
		/* Stats targets' rows beside the maps': derive() sums equal labels. */
		size_t cap = rows[i].count;
		if (rc == 0)
			rc = bx_stats_rows(ex, i, &rows[i].items, &rows[i].count, &cap);
	}
	bx_foreign_t *foreign = rc == 0 ? bx_foreign_collect(ex, s) : NULL;
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
		if (!(bx_metric_group(m) & ex->groups))
			continue;
		rc = m->source == BX_SRC_SELF ? self_metric(ex, s, m)
		                              : derive(s, m, &rows[m->map], bx_foreign_table_parts(foreign, m), natives);
	}
	for (size_t i = 0; i < bx_map_count; i++)
		free(rows[i].items);
	if (rc == 0)
		rc = bx_foreign_emit(foreign);
	bx_foreign_free(foreign);
	return rc;
}
