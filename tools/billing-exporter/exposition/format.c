/*
 * format.c -- writers of a snapshot.  Label values arrive sanitized
 * (labels.c): printable UTF-8 without backslashes, so the only escape
 * left is the quote.
 */
#include "format.h"

#include "term_text.h" /* tools/probe-reader */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy s, escaping newlines and the characters in specials: runs of
 * plain bytes in one piece (a scrape writes tens of thousands of them). */
static void put_escaped(pr_buf_t *b, const char *s, const char *specials)
{
	while (*s) {
		size_t run = strcspn(s, specials);
		size_t nl = strcspn(s, "\n");
		if (nl < run)
			run = nl;
		pr_buf_append(b, s, run);
		s += run;
		if (!*s)
			break;
		char esc[3] = { '\\', *s == '\n' ? 'n' : *s, '\0' };
		pr_buf_append(b, esc, 2);
		s++;
	}
}

/* A sample's value: an integer's digits written here (most values are
 * counts: a scrape writes thousands), anything else as %.17g. */
static void put_value(pr_buf_t *b, double v)
{
	char text[32], *p = text + sizeof text;
	if (v == (double)(long long)v && v < 9007199254740992.0 && v > -9007199254740992.0) {
		long long i = (long long)v;
		unsigned long long u = i < 0 ? 0ull - (unsigned long long)i : (unsigned long long)i;
		do
			*--p = (char)('0' + u % 10);
		while ((u /= 10) != 0);
		if (i < 0)
			*--p = '-';
		pr_buf_append(b, p, (size_t)(text + sizeof text - p));
		return;
	}
	int n = snprintf(text, sizeof text, "%.17g", v); /* at most 24 characters: -d.dddddddddddddddde-ddd */
	pr_buf_append(b, text, n > 0 ? (size_t)n : 0);
}

/* OpenMetrics names a counter family without its _total. */
static void family_name(const bx_metric_t *m, int om, char *out, size_t n)
{
	size_t len = strlen(m->name);
	if (om && m->type == BX_COUNTER && len > 6 && strcmp(m->name + len - 6, "_total") == 0)
		len -= 6;
	snprintf(out, n, "%.*s", (int)len, m->name);
}

static void put_labels(pr_buf_t *b, const bx_sample_t *x)
{
	if (x->nlabels == 0)
		return;
	pr_buf_append(b, "{", 1);
	for (size_t i = 0; i < x->nlabels; i++) {
		if (i)
			pr_buf_append(b, ",", 1);
		pr_buf_puts(b, x->label_names[i]);
		pr_buf_append(b, "=\"", 2);
		put_escaped(b, x->label_values[i], "\"\\");
		pr_buf_append(b, "\"", 1);
	}
	pr_buf_append(b, "}", 1);
}

static void put_exemplar(pr_buf_t *b, const bx_sample_t *prev, const bx_sample_t *x,
                         const bx_exemplar_source_t *src)
{
	bx_exemplar_t e;
	if (!bx_exemplar_of(src, prev, x, &e))
		return;
	pr_buf_printf(b, " # {request_id=\"%" PRIu64 "\"} ", (uint64_t)e.request_id);
	put_value(b, e.value);
	pr_buf_printf(b, " %.3f", e.timestamp);
}

static void write_exposition(const bx_snapshot_t *s, int om, const bx_exemplar_source_t *src,
                             pr_buf_t *b)
{
	const char *last = NULL;
	char family[128];

	for (size_t i = 0; i < s->count; i++) {
		const bx_sample_t *x = &s->samples[i];
		const bx_metric_t *m = x->metric;
		if (!last || strcmp(last, m->name) != 0) {
			last = m->name;
			family_name(m, om, family, sizeof family);
			pr_buf_printf(b, "# HELP %s ", family);
			put_escaped(b, m->help, om ? "\"\\" : "\\");
			pr_buf_printf(b, "\n# TYPE %s %s\n", family, bx_metric_type_name(m->type));
			size_t fl = strlen(family), ul = strlen(m->unit);
			if (om && ul && strchr(m->unit, ' ') == NULL && fl > ul &&
			    strcmp(family + fl - ul, m->unit) == 0)
				pr_buf_printf(b, "# UNIT %s %s\n", family, m->unit);
		}
		pr_buf_puts(b, m->name);
		pr_buf_puts(b, x->suffix);
		put_labels(b, x);
		pr_buf_append(b, " ", 1);
		put_value(b, x->value);
		if (om)
			put_exemplar(b, i ? x - 1 : NULL, x, src);
		pr_buf_append(b, "\n", 1);
	}
	if (om)
		pr_buf_printf(b, "# EOF\n");
}

/* The series name as a terminal may show it: label values are valid
 * UTF-8 for the exposition, but a terminal acts on C1 controls in it
 * (U+009B is CSI), so the row goes through the tools' one escaper. */
static void put_table_name(pr_buf_t *b, const char *name)
{
	size_t n = pr_escaped_width(name) + 1;
	char *shown = malloc(n);
	if (!shown) {
		pr_buf_printf(b, "%-100s ", "?");
		return;
	}
	pr_buf_printf(b, "%-100s ", pr_escape_into(name, shown, n));
	free(shown);
}

/* The table leaves buckets out: count and sum say enough on a terminal. */
static void write_table(const bx_snapshot_t *s, pr_buf_t *b)
{
	for (size_t i = 0; i < s->count; i++) {
		const bx_sample_t *x = &s->samples[i];
		if (strcmp(x->suffix, "_bucket") == 0)
			continue;
		pr_buf_t name = { 0 };
		pr_buf_printf(&name, "%s%s", x->metric->name, x->suffix);
		put_labels(&name, x);
		put_table_name(b, name.failed ? "?" : name.data);
		put_value(b, x->value);
		pr_buf_printf(b, "\n");
		free(name.data);
	}
}

static void put_json_string(pr_buf_t *b, const char *s)
{
	pr_buf_printf(b, "\"");
	put_escaped(b, s, "\"\\");
	pr_buf_printf(b, "\"");
}

static void write_json(const bx_snapshot_t *s, double now, pr_buf_t *b)
{
	for (size_t i = 0; i < s->count; i++) {
		const bx_sample_t *x = &s->samples[i];
		pr_buf_printf(b, "{\"time\":%.3f,\"metric\":\"%s%s\",\"labels\":{", now, x->metric->name, x->suffix);
		for (size_t l = 0; l < x->nlabels; l++) {
			pr_buf_printf(b, "%s", l ? "," : "");
			put_json_string(b, x->label_names[l]);
			pr_buf_printf(b, ":");
			put_json_string(b, x->label_values[l]);
		}
		pr_buf_printf(b, "},\"value\":");
		put_value(b, x->value);
		pr_buf_printf(b, "}\n");
	}
}

void bx_format(const bx_snapshot_t *s, bx_format_t f, double now_seconds, pr_buf_t *b)
{
	switch (f) {
	case BX_FMT_PROMETHEUS: write_exposition(s, 0, NULL, b); break;
	case BX_FMT_OPENMETRICS: write_exposition(s, 1, NULL, b); break;
	case BX_FMT_TABLE: write_table(s, b); break;
	case BX_FMT_JSON: write_json(s, now_seconds, b); break;
	case BX_FMT_PROTOBUF: bx_format_protobuf(s, NULL, b); break;
	}
}

void bx_format_openmetrics(const bx_snapshot_t *s, const bx_exemplar_source_t *src, pr_buf_t *b)
{
	write_exposition(s, 1, src, b);
}
