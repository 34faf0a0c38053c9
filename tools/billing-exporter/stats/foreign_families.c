/*
 * foreign_families.c -- the metric families that stats segments describe
 * and this exporter's tables do not hold (a probe or an "@@" line its
 * billing.d lacks): served from each segment's own description
 * (stats_layout.h), with the exposition and escaping of the table's
 * families.  A family from several segments is summed only when every
 * description of it agrees (type, source, labels, help, buckets, unit
 * conversion); a segment whose description of it differs is one line and
 * its rows of that family are left out, never summed wrongly.  A family
 * this exporter's tables name is served by the tables alone (snapshot.c).
 *
 * A family of a segment stays in its own namespace (stats_source.h):
 * a service user's segment that named a family `up` with a `host` label
 * made the fleet's central Prometheus page for another host.  Refusing
 * these names, rather than requiring a prefix of every foreign family,
 * keeps every family a team's billing.d may declare (billing.d asks for
 * no prefix) and still shuts out each name another family owns.
 */
#include "stats_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_state.h"

typedef struct fam {
	bx_metric_t *metric; /* in the snapshot's foreign list */
	bx_quantity_t q;     /* SUM, HIST: the quantity as its description says */
	size_t ncells;
	bx_parts_t rows;
} fam_t;

static const bs_lquantity_t *quantity_of(const bs_layout_t *l, const bs_lfamily_t *f)
{
	return f->value < 0 ? NULL : &l->quantities[l->maps[f->map].values[f->value].quantity];
}

struct bx_foreign {
	char why[256]; /* the reason a family is refused, for say() */
	unsigned groups;
	bx_snapshot_t *s;
	fam_t *fams;
	size_t n, cap;
	bx_parts_t *own; /* per table metric: its rows from maps of another shape */
};
typedef struct bx_foreign ctx_t;

/* The table's metric of that name, or -1. */
static int in_tables(const char *name)
{
	for (size_t i = 0; i < bx_metric_count; i++)
		if (strcmp(bx_metrics[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Is word (n bytes) one of the space-separated words of list, or (prefix)
 * does it begin with one? */
static int in_list(const char *list, const char *word, size_t n, int prefix)
{
	for (const char *w = list; *w;) {
		size_t k = strcspn(w, " ");
		if (prefix ? n >= k && memcmp(word, w, k) == 0 : n == k && memcmp(word, w, k) == 0)
			return 1;
		w += k + (w[k] == ' ');
	}
	return 0;
}

/* The length of name without every trailing _total, _created, _count,
 * _sum and _bucket: two families whose names agree so take each other's
 * series (a histogram's N_count is a counter N_count's only series). */
static size_t stem_len(const char *name)
{
	static const char *const suffixes[] = { "_total", "_created", "_count", "_sum", "_bucket" };
	size_t n = strlen(name);
	for (int again = 1; again;) {
		again = 0;
		for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
			size_t k = strlen(suffixes[i]);
			if (n > k && memcmp(name + n - k, suffixes[i], k) == 0) {
				n -= k;
				again = 1;
			}
		}
	}
	return n;
}

static int same_stem(const char *a, const char *b)
{
	size_t n = stem_len(a);
	return n == stem_len(b) && memcmp(a, b, n) == 0;
}

/* Why family f, which the tables do not name, may not be served: a name
 * or a label name that is not its own (stats_source.h); NULL when it
 * may. */
static const char *not_its_own(ctx_t *c, const bs_lfamily_t *f)
{
	if (in_list(BX_FOREIGN_RESERVED_NAMES, f->name, strlen(f->name), 0) ||
	    in_list(BX_FOREIGN_RESERVED_PREFIXES, f->name, strlen(f->name), 1))
		return "takes a name kept for Prometheus's own series or this exporter's (" BX_FOREIGN_RESERVED_NAMES
		       "; names beginning " BX_FOREIGN_RESERVED_PREFIXES ")";
	for (size_t i = 0; i < f->nlabels; i++)
		if (in_list(BX_FOREIGN_RESERVED_LABELS, f->labels[i].name, strlen(f->labels[i].name), 0)) {
			snprintf(c->why, sizeof c->why, "has a label %s, which scrapes and the fleet attach (%s)",
			         f->labels[i].name, BX_FOREIGN_RESERVED_LABELS);
			return c->why;
		}
	const char *owner = NULL;
	for (size_t i = 0; i < bx_metric_count && !owner; i++)
		owner = same_stem(f->name, bx_metrics[i].name) ? bx_metrics[i].name : NULL;
	for (size_t j = 0; j < c->n && !owner; j++)
		owner = same_stem(f->name, c->fams[j].metric->name) ? c->fams[j].metric->name : NULL;
	if (!owner)
		return NULL;
	snprintf(c->why, sizeof c->why, "takes the series of family %s (the same name but for _total, _created, "
	                                "_count, _sum or _bucket)",
	         owner);
	return c->why;
}

static bx_source_t source_of(const bs_lfamily_t *f)
{
	return f->source == BS_SRC_COUNT ? BX_SRC_COUNT : f->source == BS_SRC_SUM ? BX_SRC_SUM
	                                                                          : BX_SRC_HIST;
}

/* Does description l say family f as m is said (its quantity mq, NULL
 * for a count): the same source, label names and, for a sum or
 * histogram, the same quantity conversion, and for a histogram the same
 * buckets? */
static int same_as(const bx_metric_t *m, const bx_quantity_t *mq, const bs_layout_t *l, const bs_lfamily_t *f)
{
	const bs_lquantity_t *q = quantity_of(l, f);
	int same = m->source == source_of(f) && m->nlabels == f->nlabels && !q == !mq;
	for (size_t i = 0; same && i < f->nlabels; i++)
		same = strcmp(m->labels[i].name, f->labels[i].name) == 0;
	if (same && q) {
		same = mq->is_signed == q->is_signed && mq->divide == strtod(q->divide, NULL) &&
		       (m->source != BX_SRC_HIST || mq->nbounds == q->nbounds);
		for (size_t b = 0; same && m->source == BX_SRC_HIST && b < q->nbounds; b++)
			same = strcmp(mq->le[b], q->le[b]) == 0;
	}
	return same;
}

/* The family as this description says it, kept for the snapshot. */
static fam_t *fam_new(ctx_t *c, const bs_layout_t *l, const bs_lfamily_t *f)
{
	bx_snapshot_t *s = c->s;
	const bs_lquantity_t *q = quantity_of(l, f);
	char unit[BS_LAYOUT_NAME_BYTES + 1] = "";
	fam_t *more = c->n == c->cap ? realloc(c->fams, (c->cap = c->cap ? c->cap * 2 : 8) * sizeof *more) : c->fams;
	bx_metric_t **list = realloc(s->foreign, (s->nforeign + 1) * sizeof *list);
	bx_metric_t *m = calloc(1, sizeof *m);
	if (!more || !list || !m) {
		free(m);
		c->fams = more ? more : c->fams;
		s->foreign = list ? list : s->foreign;
		return NULL;
	}
	c->fams = more;
	s->foreign = list;
	s->foreign[s->nforeign++] = m;
	fam_t *x = &c->fams[c->n++];
	memset(x, 0, sizeof *x);
	x->metric = m;
	if (q) {
		snprintf(unit, sizeof unit, "%s", q->unit);
		for (char *u = unit; *u; u++)
			*u = *u == '_' ? ' ' : *u; /* the description writes a unit's spaces as '_' */
	}
	m->name = bx_snapshot_own(s, f->name);
	m->help = bx_snapshot_own(s, f->help);
	m->unit = bx_snapshot_own(s, unit);
	m->type = f->type == BS_TYPE_HISTOGRAM ? BX_HISTOGRAM : BX_COUNTER;
	m->source = source_of(f);
	m->map = -1;
	m->quantity = -1;
	m->where_nonzero = BX_WHERE_ALL;
	m->nlabels = f->nlabels;
	for (size_t i = 0; i < f->nlabels; i++)
		if (!(m->labels[i].name = bx_snapshot_own(s, f->labels[i].name)))
			return NULL;
	x->ncells = 1;
	if (q) {
		x->ncells = q->nbounds + 3;
		x->q.divide = strtod(q->divide, NULL);
		x->q.is_signed = q->is_signed;
		x->q.nbounds = q->nbounds;
		for (size_t b = 0; b < q->nbounds; b++)
			if (!(x->q.le[b] = bx_snapshot_own(s, q->le[b])))
				return NULL;
		if (!(x->q.divide > 0))
			return NULL;
	}
	return m->name && m->help && m->unit ? x : NULL;
}

/* Does this description say family x as the first one did (its help and
 * type too)? */
static int same_family(const fam_t *x, const bs_layout_t *l, const bs_lfamily_t *f)
{
	return same_as(x->metric, quantity_of(l, f) ? &x->q : NULL, l, f) && strcmp(x->metric->help, f->help) == 0 &&
	       (x->metric->type == BX_HISTOGRAM) == (f->type == BS_TYPE_HISTOGRAM);
}

/* A row's value of label i of family f, kept for the snapshot. */
static const char *label_value(bx_snapshot_t *s, const bs_lmap_t *mi, const bs_lfamily_t *f, size_t i,
                               const bs_read_row_t *row)
{
	char buf[BX_LABEL_TEXT];
	int fi = f->labels[i].field;
	switch (f->labels[i].decode) {
	case BS_LABEL_CONSTANT: return bx_snapshot_own(s, f->labels[i].constant);
	case BS_LABEL_NONZERO: return bx_snapshot_own(s, row->ints[fi] == 0 ? f->labels[i].zero : f->labels[i].nonzero);
	default: break;
	}
	if (row->state[fi] != BS_FIELD_VALUE)
		return BX_LABEL_OTHER;
	return bx_snapshot_own(s, bx_label_text(mi->fields[fi].is_string ? row->text[fi] : NULL, sizeof row->text[fi],
	                                        row->ints[fi], buf));
}

/* Family f's rows of one reading, as parts of ncells cells (its count,
 * or its quantity's count, sum and buckets). */
static int add_rows(ctx_t *c, bx_parts_t *out, size_t ncells, const bs_segment_t *seg, const bs_lfamily_t *f)
{
	const bs_lmap_t *mi = &seg->layout->maps[f->map];
	size_t first = f->value < 0 ? 0 : mi->values[f->value].cell;
	for (size_t r = 0; r < seg->map_rows[f->map]; r++) {
		const bs_read_row_t *row = bs_map_row(seg, f->map, r);
		if (f->where >= 0 && row->ints[f->where] == 0)
			continue;
		if (out->n == out->cap) {
			bx_series_t *more = realloc(out->items, (out->cap = out->cap ? out->cap * 2 : 64) * sizeof *more);
			if (!more)
				return -1;
			out->items = more;
		}
		bx_series_t *a = &out->items[out->n++];
		memset(a, 0, sizeof *a);
		a->n = f->nlabels;
		for (size_t i = 0; i < f->nlabels; i++)
			if (!(a->values[i] = label_value(c->s, mi, f, i, row)))
				return -1;
		memcpy(a->cells, bs_map_cells(seg, f->map, r) + first, ncells * sizeof a->cells[0]);
		if (f->source == BS_SRC_OBSERVE) { /* whole histograms: the count is the buckets' sum */
			a->cells[0] = 0;
			for (size_t b = 0; b + 3 <= ncells; b++)
				a->cells[0] += a->cells[2 + b];
		}
	}
	return 0;
}

/* One line per segment and family, however many of its maps feed it. */
static void say(uint64_t *said, const bs_layout_t *l, size_t i, const char *path, const char *why)
{
	const char *name = l->families[i].name;
	if (said[i / 64] >> (i % 64) & 1)
		return;
	bx_error("%s: family %s %s: not served from it", path, name, why);
	for (size_t k = 0; k < l->nfamilies; k++)
		if (strcmp(l->families[k].name, name) == 0)
			said[k / 64] |= 1ull << (k % 64);
}

/* A table family fed by a map of another shape: its rows go with the
 * table's own when the segment describes it alike, else one line. */
static int table_family(ctx_t *c, int k, const char *path, const bs_segment_t *seg, size_t i, uint64_t *said)
{
	const bs_lfamily_t *f = &seg->layout->families[i];
	const bx_metric_t *m = &bx_metrics[k];
	if (!(bx_metric_group(m) & c->groups))
		return 0;
	if (!same_as(m, m->quantity < 0 ? NULL : &bx_quantities[bx_maps[m->map].quantities[m->quantity].quantity],
	             seg->layout, f)) {
		say(said, seg->layout, i, path, "is described otherwise than in this exporter's table (type, labels or buckets)");
		return 0;
	}
	const bs_lquantity_t *q = quantity_of(seg->layout, f);
	return add_rows(c, &c->own[k], q ? q->nbounds + 3 : 1, seg, f);
}

/* The description last found to say nothing but the table's families
 * in the table's maps (the usual case: segments of this build): the
 * segments that share it are passed over at the cost of a compare. */
static uint64_t only_table_hash;
static size_t only_table_len;

static int one_reading(void *arg, const char *path, const bs_segment_t *seg, uint64_t *said)
{
	ctx_t *c = arg;
	const bs_layout_t *l = seg->layout;
	int foreign = 0;
	if (!l || (l->hash == only_table_hash && l->len == only_table_len))
		return 0;
	for (size_t i = 0; i < l->nfamilies; i++) {
		const bs_lfamily_t *f = &l->families[i];
		unsigned group = bx_group_by_name(l->maps[f->map].group);
		int k = in_tables(f->name);
		if (k >= 0 && l->maps[f->map].build_map >= 0)
			continue; /* the table's own rows (snapshot.c) */
		foreign = 1;
		if (k >= 0) {
			if (table_family(c, k, path, seg, i, said) != 0)
				return -1;
			continue;
		}
		if (group && !(group & c->groups))
			continue;
		fam_t *x = NULL;
		for (size_t j = 0; j < c->n && !x; j++)
			x = strcmp(c->fams[j].metric->name, f->name) == 0 ? &c->fams[j] : NULL;
		const bs_lquantity_t *q = quantity_of(l, f);
		const char *why = f->nlabels > BX_MAX_FIELDS || f->nlabels >= BX_SAMPLE_LABELS
		                      ? "has more labels than this exporter serves"
		                  : q && q->nbounds > BX_MAX_BOUNDS ? "has more buckets than this exporter serves"
		                  : x && !same_family(x, l, f)      ? "is described otherwise than by the segments read before it "
		                                                      "(type, labels, help or buckets): not summed with them"
		                  : !x                              ? not_its_own(c, f)
		                                                    : NULL;
		if (!why && !x && !(x = fam_new(c, l, f)))
			return -1;
		if (why) {
			say(said, l, i, path, why);
			continue;
		}
		if (add_rows(c, &x->rows, x->ncells, seg, f) != 0)
			return -1;
	}
	if (!foreign) {
		only_table_hash = l->hash;
		only_table_len = l->len;
	}
	return 0;
}

bx_foreign_t *bx_foreign_collect(bx_stats_t *stats, unsigned groups, bx_snapshot_t *s)
{
	ctx_t *c = calloc(1, sizeof *c);
	if (!c || !(c->own = calloc(bx_metric_count, sizeof *c->own))) {
		free(c);
		return NULL;
	}
	c->groups = groups;
	c->s = s;
	if (bx_stats_each_reading(stats, one_reading, c) != 0) {
		bx_foreign_free(c);
		return NULL;
	}
	return c;
}

const bx_parts_t *bx_foreign_table_parts(const bx_foreign_t *c, const bx_metric_t *m)
{
	return &c->own[m - bx_metrics];
}

int bx_foreign_emit(bx_foreign_t *c)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < c->n; i++)
		rc = bx_snapshot_series(c->s, c->fams[i].metric, &c->fams[i].q, c->fams[i].rows.items, c->fams[i].rows.n, NULL);
	return rc;
}

void bx_foreign_free(bx_foreign_t *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->fams[i].rows.items);
	for (size_t i = 0; c->own && i < bx_metric_count; i++)
		free(c->own[i].items);
	free(c->own);
	free(c->fams);
	free(c);
}
