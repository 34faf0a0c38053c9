/*
 * format.c -- writers of a snapshot.  Label values arrive sanitized
 * (labels.c): printable UTF-8 without backslashes, so the only escape
 * left is the quote.
 */
#include "format.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and a NUL; 0, or -1 (and b->failed) when out of memory. */
static int reserve(bx_buf_t *b, size_t n)
{
	if (b->failed)
		return -1;
	if (b->cap - b->len > n)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len <= n)
		cap *= 2;
	char *d = realloc(b->data, cap);
	if (!d) {
		b->failed = 1;
		return -1;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

void bx_buf_printf(bx_buf_t *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
		return;
	}
	if (reserve(b, (size_t)n) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void bx_buf_append(bx_buf_t *b, const char *s, size_t n)
{
	if (reserve(b, n) != 0)
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static void put(bx_buf_t *b, const char *s)
{
	bx_buf_append(b, s, strlen(s));
}

/* Copy s, escaping newlines and the characters in specials: runs of
 * plain bytes in one piece (a scrape writes tens of thousands of them). */
static void put_escaped(bx_buf_t *b, const char *s, const char *specials)
{
	while (*s) {
		size_t run = strcspn(s, specials);
		size_t nl = strcspn(s, "\n");
		if (nl < run)
			run = nl;
		bx_buf_append(b, s, run);
		s += run;
		if (!*s)
			break;
		char esc[3] = { '\\', *s == '\n' ? 'n' : *s, '\0' };
		bx_buf_append(b, esc, 2);
		s++;
	}
}

static void put_value(bx_buf_t *b, double v)
{
	if (v == (double)(long long)v && v < 9007199254740992.0 && v > -9007199254740992.0)
		bx_buf_printf(b, "%lld", (long long)v);
	else
		bx_buf_printf(b, "%.17g", v);
}

static const char *type_name(bx_metric_type_t t)
{
	return t == BX_COUNTER ? "counter" : t == BX_GAUGE ? "gauge"
	                                                   : "histogram";
}

/* OpenMetrics names a counter family without its _total. */
static void family_name(const bx_metric_t *m, int om, char *out, size_t n)
{
	size_t len = strlen(m->name);
	if (om && m->type == BX_COUNTER && len > 6 && strcmp(m->name + len - 6, "_total") == 0)
		len -= 6;
	snprintf(out, n, "%.*s", (int)len, m->name);
}

static void put_labels(bx_buf_t *b, const bx_sample_t *x)
{
	if (x->nlabels == 0)
		return;
	bx_buf_append(b, "{", 1);
	for (size_t i = 0; i < x->nlabels; i++) {
		if (i)
			bx_buf_append(b, ",", 1);
		put(b, x->label_names[i]);
		bx_buf_append(b, "=\"", 2);
		put_escaped(b, x->label_values[i], "\"\\");
		bx_buf_append(b, "\"", 1);
	}
	bx_buf_append(b, "}", 1);
}

static void write_exposition(const bx_snapshot_t *s, int om, bx_buf_t *b)
{
	const char *last = NULL;
	char family[128];

	for (size_t i = 0; i < s->count; i++) {
		const bx_sample_t *x = &s->samples[i];
		const bx_metric_t *m = x->metric;
		if (!last || strcmp(last, m->name) != 0) {
			last = m->name;
			family_name(m, om, family, sizeof family);
			bx_buf_printf(b, "# HELP %s ", family);
			put_escaped(b, m->help, om ? "\"\\" : "\\");
			bx_buf_printf(b, "\n# TYPE %s %s\n", family, type_name(m->type));
			size_t fl = strlen(family), ul = strlen(m->unit);
			if (om && ul && strchr(m->unit, ' ') == NULL && fl > ul &&
			    strcmp(family + fl - ul, m->unit) == 0)
				bx_buf_printf(b, "# UNIT %s %s\n", family, m->unit);
		}
		put(b, m->name);
		put(b, x->suffix);
		put_labels(b, x);
		bx_buf_append(b, " ", 1);
		put_value(b, x->value);
		bx_buf_append(b, "\n", 1);
	}
	if (om)
		bx_buf_printf(b, "# EOF\n");
}

/* The table leaves buckets out: count and sum say enough on a terminal. */
static void write_table(const bx_snapshot_t *s, bx_buf_t *b)
{
	for (size_t i = 0; i < s->count; i++) {
		const bx_sample_t *x = &s->samples[i];
		if (strcmp(x->suffix, "_bucket") == 0)
			continue;
		bx_buf_t name = { 0 };
		bx_buf_printf(&name, "%s%s", x->metric->name, x->suffix);
		put_labels(&name, x);
		bx_buf_printf(b, "%-100s ", name.failed ? "?" : name.data);
		put_value(b, x->value);
		bx_buf_printf(b, "\n");
		free(name.data);
	}
}

static void put_json_string(bx_buf_t *b, const char *s)
{
	bx_buf_printf(b, "\"");
	put_escaped(b, s, "\"\\");
	bx_buf_printf(b, "\"");
}

static void write_json(const bx_snapshot_t *s, double now, bx_buf_t *b)
{
	for (size_t i = 0; i < s->count; i++) {
		const bx_sample_t *x = &s->samples[i];
		bx_buf_printf(b, "{\"time\":%.3f,\"metric\":\"%s%s\",\"labels\":{", now, x->metric->name, x->suffix);
		for (size_t l = 0; l < x->nlabels; l++) {
			bx_buf_printf(b, "%s", l ? "," : "");
			put_json_string(b, x->label_names[l]);
			bx_buf_printf(b, ":");
			put_json_string(b, x->label_values[l]);
		}
		bx_buf_printf(b, "},\"value\":");
		put_value(b, x->value);
		bx_buf_printf(b, "}\n");
	}
}

void bx_format(const bx_snapshot_t *s, bx_format_t f, double now_seconds, bx_buf_t *b)
{
	switch (f) {
	case BX_FMT_PROMETHEUS: write_exposition(s, 0, b); break;
	case BX_FMT_OPENMETRICS: write_exposition(s, 1, b); break;
	case BX_FMT_TABLE: write_table(s, b); break;
	case BX_FMT_JSON: write_json(s, now_seconds, b); break;
	}
}

void bx_format_metric_table(bx_buf_t *b)
{
	bx_buf_printf(b, "| metric | type | unit | labels | group | probe | help |\n");
	bx_buf_printf(b, "|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < bx_metric_count; i++) {
		const bx_metric_t *m = &bx_metrics[i];
		bx_buf_printf(b, "| `%s` | %s | %s | ", m->name, type_name(m->type), *m->unit ? m->unit : "-");
		if (m->source == BX_SRC_SELF) {
			bx_buf_printf(b, "%s", *m->self_labels ? m->self_labels : "-");
		} else {
			for (size_t l = 0; l < m->nlabels; l++) {
				const bx_label_t *lb = &m->labels[l];
				bx_buf_printf(b, "%s%s", l ? ", " : "", lb->name);
				if (lb->decode == BX_DEC_CONSTANT)
					bx_buf_printf(b, "=\"%s\"", lb->constant);
			}
			if (m->type == BX_HISTOGRAM)
				bx_buf_printf(b, ", le");
		}
		bx_buf_printf(b, " | %s | %s | ", bx_group_name(bx_metric_group(m)),
		              m->map < 0 ? "-" : bx_maps[m->map].probe);
		bx_buf_printf(b, "%s |\n", m->help);
	}
}
