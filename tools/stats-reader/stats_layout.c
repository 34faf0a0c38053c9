/*
 * stats_layout.c -- parse a segment's self-description (stats_layout.h).
 * The text is split in place: lines at '\n', words at ' '.  Every count
 * is checked against its bound as it grows; the work is one pass over the
 * text plus, per family, a look at the families before it.
 */
#include "stats_layout.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 8

typedef struct parser {
	bs_layout_t *l;
	unsigned line;
	char *err;
	size_t errlen;
	size_t next_cell; /* of the map being described */
} parser_t;

static int fail(parser_t *p, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(p->err, p->errlen, "description line %u: ", p->line);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < p->errlen)
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

uint64_t bs_desc_hash(const char *text, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)text[i]) * 1099511628211ULL;
	return h;
}

/* A name: letters, digits and '_', not starting with a digit, bounded. */
static int is_name(const char *s)
{
	size_t n = 0;
	if (!s || (*s >= '0' && *s <= '9'))
		return 0;
	for (; s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9') ||
		      s[n] == '_'))
			return 0;
	return n > 0 && n < BS_LAYOUT_NAME_BYTES;
}

/* A label value the description fixes: 1 to BS_VALUE_BYTES bytes. */
static int is_value(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n > 0 && n <= BS_VALUE_BYTES;
}

/* "key=VALUE" -> VALUE, or NULL. */
static const char *opt(const char *word, const char *key)
{
	size_t n = strlen(key);
	return word && strncmp(word, key, n) == 0 && word[n] == '=' ? word + n + 1 : NULL;
}

/* A decimal count, at most max. */
static int count_of(const char *s, size_t max, size_t *out)
{
	size_t v = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > max / 10)
			return -1;
		v = v * 10 + (size_t)(*s - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

static int split_words(char *line, char **w)
{
	int n = 0;
	for (char *s = line; *s;) {
		if (n == MAX_WORDS)
			return -1;
		w[n++] = s;
		char *sp = strchr(s, ' ');
		if (!sp)
			break;
		*sp = '\0';
		s = sp + 1;
	}
	return n;
}

/* Split a comma list in place into out[0, *n), at most max. */
static int split_list(char *s, const char **out, size_t max, size_t *n)
{
	*n = 0;
	while (s) {
		if (*n == max)
			return -1;
		out[(*n)++] = s;
		s = strchr(s, ',');
		if (s)
			*s++ = '\0';
	}
	return 0;
}

static int line_known(parser_t *p, char **w, int nw)
{
	bs_layout_t *l = p->l;
	if (nw != 3 || !is_name(w[1]) || l->nknown == BS_LAYOUT_KNOWN_ARGS)
		return fail(p, "a known line is: known ARG V1,V2,... (at most %d of them)", BS_LAYOUT_KNOWN_ARGS);
	bs_lknown_t *k = &l->known[l->nknown++];
	k->arg = w[1];
	k->values = malloc(BS_KNOWN_MAX * sizeof *k->values);
	if (!k->values)
		return fail(p, "out of memory");
	if (split_list(w[2], k->values, BS_KNOWN_MAX, &k->n) != 0)
		return fail(p, "more than %d known values", BS_KNOWN_MAX);
	for (size_t i = 0; i < k->n; i++)
		if (!is_value(k->values[i]) || (i && strcmp(k->values[i - 1], k->values[i]) >= 0))
			return fail(p, "known values must be 1 to %d bytes each, sorted, distinct", BS_VALUE_BYTES);
	return 0;
}

static int flag(const char *s, int *out)
{
	if (!s || (strcmp(s, "0") != 0 && strcmp(s, "1") != 0))
		return -1;
	*out = *s == '1';
	return 0;
}

/* A small decimal integer, maybe negative: 0, or -1. */
static int small_int(const char *s, const char *end, int *out)
{
	int neg = *s == '-', v = 0;
	const char *c = s + neg;
	if (c == end || end - c > 3)
		return -1;
	for (; c < end; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		v = v * 10 + (*c - '0');
	}
	*out = neg ? -v : v;
	return 0;
}

/* "native=-" or "native=SCHEMA,LOW,HIGH" into q. */
static int native_of(const char *s, bs_lquantity_t *q)
{
	const char *a, *b;
	q->nnative = 0;
	if (!s)
		return -1;
	if (strcmp(s, "-") == 0)
		return 0;
	if (!(a = strchr(s, ',')) || !(b = strchr(a + 1, ',')) || small_int(s, a, &q->schema) != 0 ||
	    small_int(a + 1, b, &q->native_low) != 0 || small_int(b + 1, b + 1 + strlen(b + 1), &q->native_high) != 0)
		return -1;
	if (q->schema < 0 || q->schema > 8 || q->native_low < -62 || q->native_low >= q->native_high || q->native_high > 62)
		return -1;
	q->nnative = (size_t)(q->native_high - q->native_low) << q->schema;
	return q->nnative <= BS_NATIVE_BUCKETS_MAX ? 0 : -1;
}

/* log2(x), x > 0 finite, to 2^-30: the exponent from frexp's split by
 * halving and doubling, then the fraction a bit at a time by squaring (no
 * libm to link). */
static double log2_of(double x)
{
	double r = 0, bit = 1;
	while (x >= 2) {
		x /= 2;
		r += 1;
	}
	while (x < 1) {
		x *= 2;
		r -= 1;
	}
	for (int i = 0; i < 30; i++) {
		x *= x;
		bit /= 2;
		if (x >= 2) {
			x /= 2;
			r += bit;
		}
	}
	return r;
}

/* The native cell of a value x > 0 of q, in the writer's unit (a bound
 * divide * 2^(i / 2^schema) of the exposed unit): 0 the zero bucket, past
 * nnative out of range.  Floating point: callers widen it. */
static double native_cell_of(const bs_lquantity_t *q, double divide, double x)
{
	double i = (log2_of(x / divide) - q->native_low) * (double)(1 << q->schema), top = (double)q->nnative + 1;
	if (!(i > 0))
		return 0;
	if (i > top)
		return top;
	double whole = (double)(long)i;
	return whole < i ? whole + 1 : whole;
}

/* Each classic bucket's native cells (bs_lquantity_t.native_from): the
 * cells of its lower bound's value to its upper one's, widened by two. */
static void native_ranges(bs_lquantity_t *q, double divide)
{
	double top = (double)q->nnative + 1, b[BS_LAYOUT_BOUNDS];
	for (size_t k = 0; k < q->nbounds; k++)
		b[k] = strtod(q->le[k], NULL) * divide;
	for (size_t k = 0; k <= q->nbounds; k++) {
		double lo = k == 0 || b[k - 1] < 0 ? 0 : native_cell_of(q, divide, b[k - 1] > 0 ? b[k - 1] : 1) - 2;
		double hi = k == q->nbounds ? top : b[k] <= 0 ? 0
		                                              : native_cell_of(q, divide, b[k]) + 2;
		q->native_from[k] = (uint16_t)(lo < 0 ? 0 : lo);
		q->native_to[k] = (uint16_t)(hi > top ? top : hi);
		q->native_below[k] = q->is_signed && (k == 0 || b[k - 1] < 0); /* values below 0: out of range */
	}
}

static int line_quantity(parser_t *p, char **w, int nw)
{
	bs_layout_t *l = p->l;
	if (nw != 8 || !is_name(w[1]) || l->nquantities == BS_LAYOUT_QUANTITIES)
		return fail(p, "a quantity line is: quantity NAME unit= divide= unmeasured_zero= signed= le= native= (at most %d)",
		            BS_LAYOUT_QUANTITIES);
	bs_lquantity_t *q = &l->quantities[l->nquantities++];
	char *le = (char *)opt(w[6], "le");
	q->name = w[1];
	q->unit = opt(w[2], "unit");
	q->divide = opt(w[3], "divide");
	if (!q->unit || !q->divide || flag(opt(w[4], "unmeasured_zero"), &q->unmeasured_zero) != 0 ||
	    flag(opt(w[5], "signed"), &q->is_signed) != 0 || !le)
		return fail(p, "quantity %s: unit=, divide=, unmeasured_zero=0|1, signed=0|1, le= in that order", q->name);
	char *end;
	double divide = strtod(q->divide, &end);
	if (end == q->divide || *end || !isfinite(divide) || !(divide > 0) || !is_name(q->unit))
		return fail(p, "quantity %s: divide= a positive number, unit= a name", q->name);
	if (split_list(le, q->le, BS_LAYOUT_BOUNDS, &q->nbounds) != 0)
		return fail(p, "quantity %s: more than %d bucket bounds", q->name, BS_LAYOUT_BOUNDS);
	double prev = -INFINITY;
	for (size_t i = 0; i < q->nbounds; i++) {
		char *end;
		double v = strtod(q->le[i], &end);
		if (end == q->le[i] || *end || !isfinite(v) || v <= prev || strlen(q->le[i]) > 32 ||
		    strspn(q->le[i], "0123456789.eE+-") != strlen(q->le[i]))
			return fail(p, "quantity %s: bound %zu is not a decimal number above the one before", q->name, i + 1);
		prev = v;
	}
	if (native_of(opt(w[7], "native"), q) != 0)
		return fail(p, "quantity %s: native= - or SCHEMA,LOW,HIGH (0..8, -62 <= LOW < HIGH <= 62, at most %d buckets)",
		            q->name, BS_NATIVE_BUCKETS_MAX);
	if (q->nnative)
		native_ranges(q, divide);
	for (size_t i = 0; i + 1 < l->nquantities; i++)
		if (strcmp(l->quantities[i].name, q->name) == 0)
			return fail(p, "quantity %s described twice", q->name);
	return 0;
}

/* The map being described is whole: its cells are what its values take. */
static int end_map(parser_t *p)
{
	bs_lmap_t *m = p->l->nmaps ? &p->l->maps[p->l->nmaps - 1] : NULL;
	if (m && m->cells != p->next_cell)
		return fail(p, "map %s claims %zu cells, its values take %zu", m->name, m->cells, p->next_cell);
	return 0;
}

static int line_map(parser_t *p, char **w, int nw)
{
	bs_layout_t *l = p->l;
	if (end_map(p) != 0)
		return -1;
	if (nw != 7 || !is_name(w[1]) || l->nmaps == BS_MAX_MAPS)
		return fail(p, "a map line is: map NAME probe= group= key= cells= folds= (at most %d maps)", BS_MAX_MAPS);
	bs_lmap_t *m = &l->maps[l->nmaps++];
	m->name = w[1];
	m->probe = opt(w[2], "probe");
	m->group = opt(w[3], "group");
	m->build_map = -1;
	if (!is_name(m->probe) || !is_name(m->group) || count_of(opt(w[4], "key"), 4096, &m->key) != 0 ||
	    count_of(opt(w[5], "cells"), BS_CELLS_MAX, &m->cells) != 0 || m->cells < 1 ||
	    count_of(opt(w[6], "folds"), BS_LAYOUT_FOLDS_MAX, &m->folds) != 0)
		return fail(p, "map %s: probe=NAME group=NAME key=N cells=1..%d folds=0..%u", m->name, BS_CELLS_MAX,
		            BS_LAYOUT_FOLDS_MAX);
	for (size_t i = 0; i + 1 < l->nmaps; i++)
		if (strcmp(l->maps[i].name, m->name) == 0 || strcmp(l->maps[i].probe, m->probe) == 0)
			return fail(p, "map %s or its probe described twice", m->name);
	p->next_cell = 1;
	return 0;
}

static bs_lmap_t *current_map(parser_t *p, const char *what)
{
	bs_layout_t *l = p->l;
	if (!l->nmaps || (l->nfamilies && l->families[l->nfamilies - 1].map == l->nmaps - 1 && strcmp(what, "family")))
		return fail(p, "a %s line outside a map's fields and values", what), NULL;
	return &l->maps[l->nmaps - 1];
}

static int line_field(parser_t *p, char **w, int nw)
{
	bs_lmap_t *m = current_map(p, "field");
	if (!m)
		return -1;
	if (m->nvalues || nw != 4 || !is_name(w[1]) || m->nfields == BS_MAX_FIELDS)
		return fail(p, "a field line is: field NAME string|int32 SIZE, before the values (at most %d)",
		            BS_MAX_FIELDS);
	bs_lfield_t *f = &m->fields[m->nfields++];
	f->name = w[1];
	f->is_string = strcmp(w[2], "string") == 0;
	if ((!f->is_string && strcmp(w[2], "int32") != 0) || count_of(w[3], BS_VALUE_BYTES, &f->size) != 0 ||
	    f->size < 1 || (!f->is_string && f->size != 4))
		return fail(p, "field %s: string of 1..%d bytes, or int32 of 4", f->name, BS_VALUE_BYTES);
	for (size_t i = 0; i + 1 < m->nfields; i++)
		if (strcmp(m->fields[i].name, f->name) == 0)
			return fail(p, "field %s described twice", f->name);
	for (size_t i = 0; f->is_string && i < p->l->nknown; i++)
		if (strcmp(p->l->known[i].arg, f->name) == 0)
			f->known = &p->l->known[i];
	return 0;
}

static int line_value(parser_t *p, char **w, int nw)
{
	bs_lmap_t *m = current_map(p, "value");
	const bs_layout_t *l = p->l;
	if (!m)
		return -1;
	if (nw != 2 || m->nvalues == BS_LAYOUT_VALUES)
		return fail(p, "a value line is: value QUANTITY (at most %d per map)", BS_LAYOUT_VALUES);
	for (size_t q = 0; q < l->nquantities; q++) {
		if (strcmp(l->quantities[q].name, w[1]) != 0)
			continue;
		for (size_t i = 0; i < m->nvalues; i++)
			if (m->values[i].quantity == q)
				return fail(p, "value %s twice in map %s", w[1], m->name);
		m->values[m->nvalues].quantity = q;
		m->values[m->nvalues].native = m->native_cells;
		m->native_cells += l->quantities[q].nnative ? l->quantities[q].nnative + 2 : 0;
		m->values[m->nvalues++].cell = p->next_cell;
		p->next_cell += 3 + l->quantities[q].nbounds;
		if (p->next_cell > BS_CELLS_MAX)
			return fail(p, "map %s: more than %d cells", m->name, BS_CELLS_MAX);
		return 0;
	}
	return fail(p, "value %s: no such quantity", w[1]);
}

static int field_of(const bs_lmap_t *m, const char *name, int want_int)
{
	for (size_t i = 0; i < m->nfields; i++)
		if (strcmp(m->fields[i].name, name) == 0 && (!want_int || !m->fields[i].is_string))
			return (int)i;
	return -1;
}

static int line_family(parser_t *p, char **w, int nw)
{
	bs_layout_t *l = p->l;
	bs_lmap_t *m = current_map(p, "family");
	if (!m)
		return -1;
	if (nw != 6 || !is_name(w[1]) || l->nfamilies == BS_LAYOUT_FAMILIES)
		return fail(p, "a family line is: family NAME TYPE SOURCE QUANTITY|- WHERE|- (at most %d)",
		            BS_LAYOUT_FAMILIES);
	bs_lfamily_t *f = &l->families[l->nfamilies++];
	f->name = w[1];
	f->map = l->nmaps - 1;
	f->type = strcmp(w[2], "histogram") == 0 ? BS_TYPE_HISTOGRAM : strcmp(w[2], "counter") == 0 ? BS_TYPE_COUNTER
	                                                                                            : -1;
	f->source = strcmp(w[3], "count") == 0 ? BS_SRC_COUNT : strcmp(w[3], "sum") == 0   ? BS_SRC_SUM
	                                                    : strcmp(w[3], "observe") == 0 ? BS_SRC_OBSERVE
	                                                                                   : -1;
	if (f->type < 0 || f->source < 0 || (f->type == BS_TYPE_HISTOGRAM) != (f->source == BS_SRC_OBSERVE))
		return fail(p, "family %s: counter of count or sum, or histogram of observe", f->name);
	f->value = -1;
	for (size_t i = 0; f->source != BS_SRC_COUNT && i < m->nvalues; i++)
		if (strcmp(l->quantities[m->values[i].quantity].name, w[4]) == 0)
			f->value = (int)i;
	if ((f->source == BS_SRC_COUNT) != (strcmp(w[4], "-") == 0) || (f->source != BS_SRC_COUNT && f->value < 0))
		return fail(p, "family %s: quantity %s is not a value of map %s", f->name, w[4], m->name);
	f->where = strcmp(w[5], "-") == 0 ? -1 : field_of(m, w[5], 1);
	if (f->where < 0 && strcmp(w[5], "-") != 0)
		return fail(p, "family %s: where %s is not an int32 field of map %s", f->name, w[5], m->name);
	return 0;
}

static bs_lfamily_t *current_family(parser_t *p, const char *what)
{
	bs_layout_t *l = p->l;
	if (!l->nfamilies || l->families[l->nfamilies - 1].map != l->nmaps - 1)
		return fail(p, "a %s line outside a family", what), NULL;
	return &l->families[l->nfamilies - 1];
}

/* "help TEXT": printable ASCII, once, right after its family line. */
static int line_help(parser_t *p, char *text)
{
	bs_lfamily_t *f = current_family(p, "help");
	if (!f)
		return -1;
	if (f->help || f->nlabels)
		return fail(p, "family %s: one help line, before its labels", f->name);
	f->help = text;
	return 0;
}

static int line_label(parser_t *p, char **w, int nw)
{
	bs_lfamily_t *f = current_family(p, "label");
	if (!f)
		return -1;
	const bs_lmap_t *m = &p->l->maps[p->l->nmaps - 1];
	if (!f->help || nw < 4 || !is_name(w[1]) || strncmp(w[1], "__", 2) == 0 || strcmp(w[1], "le") == 0 ||
	    f->nlabels == BS_LAYOUT_LABELS)
		return fail(p, "a label line is: label NAME value|nonzero|constant ..., after its family's help");
	for (size_t i = 0; i < f->nlabels; i++)
		if (strcmp(f->labels[i].name, w[1]) == 0)
			return fail(p, "family %s: label %s twice", f->name, w[1]);
	size_t i = f->nlabels++;
	f->labels[i].name = w[1];
	f->labels[i].field = -1;
	if (strcmp(w[2], "value") == 0 && nw == 4) {
		f->labels[i].decode = BS_LABEL_VALUE;
		f->labels[i].field = field_of(m, w[3], 0);
	} else if (strcmp(w[2], "nonzero") == 0 && nw == 6 && is_value(w[4]) && is_value(w[5])) {
		f->labels[i].decode = BS_LABEL_NONZERO;
		f->labels[i].field = field_of(m, w[3], 1);
		f->labels[i].zero = w[4];
		f->labels[i].nonzero = w[5];
	} else if (strcmp(w[2], "constant") == 0 && nw == 4 && is_value(w[3])) {
		f->labels[i].decode = BS_LABEL_CONSTANT;
		f->labels[i].constant = w[3];
		return 0;
	} else {
		return fail(p, "label %s: value FIELD, nonzero INTFIELD ZERO NONZERO or constant TEXT", w[1]);
	}
	return f->labels[i].field < 0 ? fail(p, "label %s: no such field of map %s", w[1], m->name) : 0;
}

/* A family fed by several maps is one family: the same type, label
 * names, and for a histogram the same buckets. */
static int check_families(parser_t *p)
{
	const bs_layout_t *l = p->l;
	for (size_t i = 0; i < l->nfamilies; i++) {
		const bs_lfamily_t *a = &l->families[i];
		if (!a->help)
			return fail(p, "family %s has no help line", a->name);
		for (size_t j = 0; j < i; j++) {
			const bs_lfamily_t *b = &l->families[j];
			if (strcmp(a->name, b->name) != 0)
				continue;
			int same = a->type == b->type && a->source == b->source && a->nlabels == b->nlabels &&
			           strcmp(a->help, b->help) == 0 && a->map != b->map;
			for (size_t k = 0; same && k < a->nlabels; k++)
				same = strcmp(a->labels[k].name, b->labels[k].name) == 0;
			if (same && a->source != BS_SRC_COUNT) {
				const bs_lquantity_t *qa = &l->quantities[l->maps[a->map].values[a->value].quantity];
				const bs_lquantity_t *qb = &l->quantities[l->maps[b->map].values[b->value].quantity];
				same = qa == qb;
			}
			if (!same)
				return fail(p, "family %s is described twice, differently", a->name);
			break;
		}
	}
	return 0;
}

/* "trail PROBE ints=A,B strings=C,D" ("-": none): the next event kind. */
static int line_trail(parser_t *p, char **w, int nw)
{
	bs_layout_t *l = p->l;
	if (l->nkinds == BS_TRAIL_KINDS)
		return fail(p, "more than %d trail lines", BS_TRAIL_KINDS);
	bs_lkind_t *k = &l->kinds[l->nkinds];
	char *ints = nw == 4 ? (char *)opt(w[2], "ints") : NULL, *strs = nw == 4 ? (char *)opt(w[3], "strings") : NULL;
	if (!ints || !strs || !is_name(w[1]))
		return fail(p, "trail PROBE ints=NAME,... strings=NAME,... (\"-\": none)");
	k->probe = w[1];
	if ((strcmp(ints, "-") != 0 && split_list(ints, k->ints, BS_TRAIL_INTS, &k->nints) != 0) ||
	    (strcmp(strs, "-") != 0 && split_list(strs, k->strs, BS_TRAIL_STRS, &k->nstrs) != 0))
		return fail(p, "trail %s: at most %d ints and %d strings", k->probe, BS_TRAIL_INTS, BS_TRAIL_STRS);
	for (size_t i = 0; i < k->nints + k->nstrs; i++)
		if (!is_name(i < k->nints ? k->ints[i] : k->strs[i - k->nints]))
			return fail(p, "trail %s: an argument name is not a name", k->probe);
	for (size_t i = 0; i < l->nkinds; i++)
		if (strcmp(l->kinds[i].probe, k->probe) == 0)
			return fail(p, "trail %s described twice", k->probe);
	l->nkinds++;
	return 0;
}

static int parse_line(parser_t *p, char *line)
{
	char *w[MAX_WORDS];
	if (strncmp(line, "help ", 5) == 0)
		return line_help(p, line + 5);
	int nw = split_words(line, w);
	if (nw <= 0)
		return fail(p, "empty, or more than %d words", MAX_WORDS);
	for (int i = 0; i < nw; i++)
		if (!*w[i])
			return fail(p, "two spaces in a row");
	return strcmp(w[0], "known") == 0      ? line_known(p, w, nw)
	       : strcmp(w[0], "quantity") == 0 ? line_quantity(p, w, nw)
	       : strcmp(w[0], "map") == 0      ? line_map(p, w, nw)
	       : strcmp(w[0], "field") == 0    ? line_field(p, w, nw)
	       : strcmp(w[0], "value") == 0    ? line_value(p, w, nw)
	       : strcmp(w[0], "family") == 0   ? line_family(p, w, nw)
	       : strcmp(w[0], "label") == 0    ? line_label(p, w, nw)
	       : strcmp(w[0], "trail") == 0    ? line_trail(p, w, nw)
	                                       : fail(p, "unknown kind of line");
}

static void layout_free(bs_layout_t *l)
{
	for (size_t i = 0; i < l->nknown; i++)
		free(l->known[i].values);
	free(l->text);
	free(l);
}

/* Parse text[0, len) into a new layout; NULL with the reason in err. */
static bs_layout_t *parse(const char *text, size_t len, uint64_t hash, char *err, size_t errlen)
{
#define BS_STR_(x) #x
#define BS_XSTR_(x) BS_STR_(x)
	static const char first[] = "billing-stats description " BS_XSTR_(BS_DESC_GRAMMAR);
	parser_t p = { NULL, 1, err, errlen, 0 };
	if (len > BS_DESC_MAX || len < sizeof first || text[len - 1] != '\n') {
		snprintf(err, errlen, "description of %zu bytes (a reader takes at most %u, ending in a newline)", len,
		         BS_DESC_MAX);
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if ((c < 0x20 || c > 0x7e) && c != '\n') {
			snprintf(err, errlen, "description byte %zu is not printable ASCII", i);
			return NULL;
		}
	}
	if (strncmp(text, first, sizeof first - 1) != 0 || text[sizeof first - 1] != '\n') {
		snprintf(err, errlen, "description grammar is not \"%s\" (this reader's)", first);
		return NULL;
	}
	if (!(p.l = calloc(1, sizeof *p.l)) || !(p.l->text = malloc(2 * len + 1))) {
		free(p.l);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(p.l->text, text, len);
	p.l->text[len] = '\0';
	memcpy(p.l->text + len + 1, text, len); /* as given, for the cache to compare */
	p.l->len = len;
	p.l->hash = hash;
	int rc = 0;
	char *line = p.l->text + sizeof first;
	for (p.line = 2; rc == 0 && *line; p.line++) {
		char *nl = strchr(line, '\n');
		*nl = '\0';
		rc = parse_line(&p, line);
		line = nl + 1;
	}
	if (rc == 0 && (end_map(&p) != 0 || check_families(&p) != 0))
		rc = -1;
	if (rc == 0 && p.l->nmaps == 0)
		rc = fail(&p, "no map");
	if (rc != 0) {
		layout_free(p.l);
		return NULL;
	}
	return p.l;
}

static int same_known(const bs_lknown_t *a, const bs_lknown_t *b)
{
	if (!a || !b)
		return a == b;
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->values[i], b->values[i]) != 0)
			return 0;
	return 1;
}

static int same_quantity(const bs_lquantity_t *a, const bs_lquantity_t *b)
{
	int same = strcmp(a->name, b->name) == 0 && strcmp(a->unit, b->unit) == 0 &&
	           strcmp(a->divide, b->divide) == 0 && a->unmeasured_zero == b->unmeasured_zero &&
	           a->is_signed == b->is_signed && a->nbounds == b->nbounds && a->nnative == b->nnative &&
	           (!a->nnative || (a->schema == b->schema && a->native_low == b->native_low));
	for (size_t i = 0; same && i < a->nbounds; i++)
		same = strcmp(a->le[i], b->le[i]) == 0;
	return same;
}

/* Map a of layout la holds its rows exactly as map b of lb: the same
 * probe, fields, known values and cells. */
static int same_map(const bs_layout_t *la, const bs_lmap_t *a, const bs_layout_t *lb, const bs_lmap_t *b)
{
	int same = strcmp(a->probe, b->probe) == 0 && a->nfields == b->nfields && a->cells == b->cells &&
	           a->nvalues == b->nvalues;
	for (size_t i = 0; same && i < a->nfields; i++)
		same = strcmp(a->fields[i].name, b->fields[i].name) == 0 && a->fields[i].is_string == b->fields[i].is_string &&
		       a->fields[i].size == b->fields[i].size && same_known(a->fields[i].known, b->fields[i].known);
	for (size_t i = 0; same && i < a->nvalues; i++)
		same = a->values[i].cell == b->values[i].cell &&
		       same_quantity(&la->quantities[a->values[i].quantity], &lb->quantities[b->values[i].quantity]);
	return same;
}

const bs_layout_t *bs_layout_own(void)
{
	static bs_layout_t *own;
	char err[256];
	if (!own) {
		size_t len = strlen(billing_stats_desc_);
		own = parse(billing_stats_desc_, len, bs_desc_hash(billing_stats_desc_, len), err, sizeof err);
		if (!own) {
			fprintf(stderr, "billing stats: this build's own description does not parse: %s\n", err);
			abort();
		}
		for (size_t m = 0; m < own->nmaps; m++)
			own->maps[m].build_map = (int)m;
	}
	return own;
}

/* Which of this build's maps each of l's maps is, when it is exactly one. */
static void match_build_maps(bs_layout_t *l)
{
	const bs_layout_t *own = bs_layout_own();
	for (size_t m = 0; m < l->nmaps; m++)
		for (size_t b = 0; b < own->nmaps && b < BX_MAP_COUNT; b++)
			if (same_map(l, &l->maps[m], own, &own->maps[b]))
				l->maps[m].build_map = (int)b;
}

/* A few recent layouts: segments of one build share theirs. */
#define CACHE_SLOTS 8
static bs_layout_t *cache[CACHE_SLOTS];
static unsigned cache_next;

bs_layout_t *bs_layout_get(const char *text, size_t len, uint64_t hash, char *err, size_t errlen)
{
	for (int i = 0; i < CACHE_SLOTS; i++) {
		bs_layout_t *c = cache[i];
		if (c && c->hash == hash && c->len == len && memcmp(c->text + len + 1, text, len) == 0) {
			c->refs++;
			return c;
		}
	}
	if (bs_desc_hash(text, len) != hash) {
		snprintf(err, errlen, "description does not match its hash");
		return NULL;
	}
	bs_layout_t *l = parse(text, len, hash, err, errlen);
	if (!l)
		return NULL;
	match_build_maps(l);
	bs_layout_t **slot = &cache[cache_next++ % CACHE_SLOTS];
	if (*slot)
		bs_layout_release(*slot);
	*slot = l;
	l->refs = 2; /* the cache's and the caller's */
	return l;
}

void bs_layout_release(bs_layout_t *l)
{
	if (l && --l->refs == 0)
		layout_free(l);
}
