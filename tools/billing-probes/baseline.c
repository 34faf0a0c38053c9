/*
 * baseline.c -- a build's probe signatures, to and from the baseline text
 * (format in baseline.h), and the comparison of two.
 *
 * The types are the ELF note's (size and signedness: "-4@%edx" is int32),
 * not billing.d's declared C types: the note is what the build carries and
 * what every consumer decodes, while the catalogue describes the tool's own
 * billing.d, which need not be the one the build used.  A reader is strict:
 * a file that is not exactly a baseline is refused with its line number,
 * since a comparison against a half-read file would name probes "added"
 * or "removed" that are not.
 */
#include "baseline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {
	"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"
};
enum { TYPE_COUNT = sizeof type_names / sizeof type_names[0],
       LONGEST_TYPE = 7,
       LONGEST_NAME = 255 };

static int is_type(const char *s, size_t n)
{
	for (size_t i = 0; i < TYPE_COUNT; i++)
		if (strlen(type_names[i]) == n && memcmp(type_names[i], s, n) == 0)
			return 1;
	return 0;
}

/* A C identifier of at most LONGEST_NAME bytes: what D allows as a
 * provider or probe name, and what keeps a line splittable. */
static int is_identifier(const char *s, size_t n)
{
	if (n == 0 || n > LONGEST_NAME || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

static int compare_entries(const void *a, const void *b)
{
	const bp_baseline_entry_t *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : strcmp(x->signature, y->signature);
}

/* Takes key and signature (freed when out of memory). */
static int append(bp_baseline_t *b, char *key, char *signature, int line)
{
	bp_baseline_entry_t *grown = NULL;
	if (key && signature)
		grown = realloc(b->entries, (b->count + 1) * sizeof *grown);
	if (!grown) {
		free(key);
		free(signature);
		return -1;
	}
	b->entries = grown;
	grown[b->count].key = key;
	grown[b->count].signature = signature;
	grown[b->count].line = line;
	b->count++;
	return 0;
}

void bp_baseline_free(bp_baseline_t *b)
{
	for (size_t i = 0; i < b->count; i++) {
		free(b->entries[i].key);
		free(b->entries[i].signature);
	}
	free(b->entries);
	memset(b, 0, sizeof *b);
}

/* --- from a build --------------------------------------------------------------- */

/* "NARGS TYPE..." of site p into sig, or -1 with why. */
static int site_signature(const pr_probe_t *p, const char *module, char *sig, size_t n, char *err, size_t errlen)
{
	if (p->nargs < 0 || p->nargs > PR_SDT_MAX_ARGS) {
		snprintf(err, errlen, "%s:%s in %s has more than %d arguments: its signature cannot be written", p->provider,
		         p->name, module, PR_SDT_MAX_ARGS);
		return -1;
	}
	size_t used = (size_t)snprintf(sig, n, "%d", p->nargs);
	for (int a = 0; a < p->nargs; a++) {
		const char *type = pr_sdt_arg_type_name(&p->args[a]);
		if (p->args[a].kind == PR_SDT_ARG_UNKNOWN || !is_type(type, strlen(type))) {
			snprintf(err, errlen, "%s:%s in %s: argument %d cannot be decoded (\"%s\"): its type cannot be written",
			         p->provider, p->name, module, a + 1, p->args[a].location);
			return -1;
		}
		used += (size_t)snprintf(sig + used, n - used, " %s", type);
	}
	return 0;
}

static void drop_duplicates(bp_baseline_t *b)
{
	size_t kept = 0;
	for (size_t i = 0; i < b->count; i++) {
		if (kept && compare_entries(&b->entries[kept - 1], &b->entries[i]) == 0) {
			free(b->entries[i].key);
			free(b->entries[i].signature);
			continue;
		}
		b->entries[kept++] = b->entries[i];
	}
	b->count = kept;
}

int bp_baseline_from_sets(const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets, bp_baseline_t *out,
                          char *err, size_t errlen)
{
	char sig[4 + PR_SDT_MAX_ARGS * (LONGEST_TYPE + 1)];
	memset(out, 0, sizeof *out);
	for (size_t k = 0; k < nsets; k++) {
		for (size_t i = 0; i < sets[k].probe_count; i++) {
			const pr_probe_t *p = &sets[k].probes[i];
			const char *module = sets[k].modules[p->module].path;
			if (!pr_catalogue_find(cat, p->provider, NULL))
				continue;
			if (!is_identifier(p->name, strlen(p->name)) || !is_identifier(p->provider, strlen(p->provider))) {
				snprintf(err, errlen, "%s:%s in %s: not a C identifier of at most %d bytes: it cannot be written in a baseline",
				         p->provider, p->name, module, LONGEST_NAME);
				bp_baseline_free(out);
				return -1;
			}
			if (site_signature(p, module, sig, sizeof sig, err, errlen) != 0) {
				bp_baseline_free(out);
				return -1;
			}
			size_t n = strlen(p->provider) + strlen(p->name) + 2;
			char *key = malloc(n);
			if (key)
				snprintf(key, n, "%s:%s", p->provider, p->name);
			if (append(out, key, strdup(sig), 0) != 0) {
				snprintf(err, errlen, "out of memory");
				bp_baseline_free(out);
				return -1;
			}
		}
	}
	if (out->count)
		qsort(out->entries, out->count, sizeof *out->entries, compare_entries);
	drop_duplicates(out);
	return 0;
}

/* --- the text --------------------------------------------------------------------- */

char *bp_baseline_format(const bp_baseline_t *b, size_t *len)
{
	size_t n = strlen(BP_BASELINE_HEADER) + 1;
	for (size_t i = 0; i < b->count; i++)
		n += strlen(b->entries[i].key) + 1 + strlen(b->entries[i].signature) + 1;
	char *text = malloc(n + 1);
	if (!text)
		return NULL;
	size_t used = (size_t)snprintf(text, n + 1, "%s\n", BP_BASELINE_HEADER);
	for (size_t i = 0; i < b->count; i++)
		used += (size_t)snprintf(text + used, n + 1 - used, "%s %s\n", b->entries[i].key, b->entries[i].signature);
	*len = used;
	return text;
}

/* One probe line, s[0..n) without its '\n': 0, or -1 with why. */
static int parse_line(const char *s, size_t n, bp_baseline_t *out, int line, char *err, size_t errlen)
{
	const char *end = s + n, *space = memchr(s, ' ', n);
	const char *colon = space ? memchr(s, ':', (size_t)(space - s)) : NULL;
	if (!colon || !is_identifier(s, (size_t)(colon - s)) || !is_identifier(colon + 1, (size_t)(space - colon - 1))) {
		snprintf(err, errlen, "line %d: not 'PROVIDER:NAME NARGS TYPE...' (PROVIDER and NAME C identifiers)", line);
		return -1;
	}
	const char *p = space + 1;
	int nargs = 0, digits = 0;
	for (; p < end && *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
		nargs = nargs * 10 + (*p - '0');
	if (digits == 0 || (digits > 1 && space[1] == '0') || nargs > PR_SDT_MAX_ARGS || (p < end && *p != ' ')) {
		snprintf(err, errlen, "line %d: the argument count is not a number from 0 to %d", line, PR_SDT_MAX_ARGS);
		return -1;
	}
	int types = 0;
	while (p < end) {
		const char *t = p + 1, *next = memchr(t, ' ', (size_t)(end - t));
		if (!next)
			next = end;
		if (!is_type(t, (size_t)(next - t))) {
			snprintf(err, errlen, "line %d: argument %d: not a type (int8 uint8 int16 uint16 int32 uint32 int64 "
			                      "uint64 float32 float64)",
			         line, types + 1);
			return -1;
		}
		types++;
		p = next;
	}
	if (types != nargs) {
		snprintf(err, errlen, "line %d: %d type%s for %d argument%s", line, types, types == 1 ? "" : "s", nargs,
		         nargs == 1 ? "" : "s");
		return -1;
	}
	if (append(out, strndup(s, (size_t)(space - s)), strndup(space + 1, (size_t)(end - space - 1)), line) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static int parse_header(const char *text, size_t n, char *err, size_t errlen)
{
	static const char prefix[] = "billing-probes baseline ";
	size_t want = strlen(BP_BASELINE_HEADER);
	if (n == want && memcmp(text, BP_BASELINE_HEADER, want) == 0)
		return 0;
	if (n > strlen(prefix) && n < 40 && memcmp(text, prefix, strlen(prefix)) == 0)
		snprintf(err, errlen, "line 1: baseline version '%.*s': this billing-probes reads '%s'",
		         (int)(n - strlen(prefix)), text + strlen(prefix), BP_BASELINE_HEADER);
	else
		snprintf(err, errlen, "line 1: not a billing-probes baseline (its first line must be '%s')",
		         BP_BASELINE_HEADER);
	return -1;
}

int bp_baseline_parse(const char *text, size_t len, bp_baseline_t *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int line = 1;
	for (size_t at = 0; at < len || line == 1; line++) {
		const char *s = text + at, *nl = memchr(s, '\n', len - at);
		size_t n = nl ? (size_t)(nl - s) : len - at;
		if (memchr(s, '\0', n) || memchr(s, '\r', n)) {
			snprintf(err, errlen, "line %d: a NUL or carriage return byte (not a baseline text file)", line);
			goto refused;
		}
		if (line == 1 ? parse_header(s, n, err, errlen) != 0 : parse_line(s, n, out, line, err, errlen) != 0)
			goto refused;
		if (!nl) {
			snprintf(err, errlen, "line %d: no newline at its end (a file cut short?)", line);
			goto refused;
		}
		at += n + 1;
	}
	if (out->count)
		qsort(out->entries, out->count, sizeof *out->entries, compare_entries);
	for (size_t i = 1; i < out->count; i++) {
		const bp_baseline_entry_t *a = &out->entries[i - 1], *b = &out->entries[i];
		if (compare_entries(a, b) == 0) {
			snprintf(err, errlen, "line %d: a duplicate of line %d", a->line > b->line ? a->line : b->line,
			         a->line < b->line ? a->line : b->line);
			goto refused;
		}
	}
	return 0;
refused:
	bp_baseline_free(out);
	return -1;
}

size_t bp_baseline_probe_count(const bp_baseline_t *b)
{
	size_t n = 0;
	for (size_t i = 0; i < b->count; i++)
		n += i == 0 || strcmp(b->entries[i - 1].key, b->entries[i].key) != 0;
	return n;
}

/* --- comparing -------------------------------------------------------------------- */

/* How many entries from i on share entries[i]'s key. */
static size_t run_length(const bp_baseline_t *b, size_t i)
{
	size_t n = 1;
	while (i + n < b->count && strcmp(b->entries[i].key, b->entries[i + n].key) == 0)
		n++;
	return n;
}

static int same_signatures(const bp_baseline_entry_t *a, const bp_baseline_entry_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i].signature, b[i].signature) != 0)
			return 0;
	return 1;
}

static int add_change(bp_baseline_diff_t *d, bp_baseline_change_kind_t kind, const bp_baseline_t *old, size_t i,
                      size_t old_n, const bp_baseline_t *new_build, size_t j, size_t new_n)
{
	bp_baseline_change_t *grown = realloc(d->items, (d->count + 1) * sizeof *grown);
	if (!grown)
		return -1;
	d->items = grown;
	bp_baseline_change_t *c = &grown[d->count++];
	c->kind = kind;
	c->key = old_n ? old->entries[i].key : new_build->entries[j].key;
	c->was = old_n ? &old->entries[i] : NULL;
	c->was_count = old_n;
	c->now = new_n ? &new_build->entries[j] : NULL;
	c->now_count = new_n;
	d->removed += kind == BP_BASELINE_REMOVED;
	d->changed += kind == BP_BASELINE_CHANGED;
	d->added += kind == BP_BASELINE_ADDED;
	return 0;
}

int bp_baseline_compare(const bp_baseline_t *old, const bp_baseline_t *new_build, bp_baseline_diff_t *out)
{
	memset(out, 0, sizeof *out);
	size_t i = 0, j = 0;
	while (i < old->count || j < new_build->count) {
		size_t old_n = i < old->count ? run_length(old, i) : 0;
		size_t new_n = j < new_build->count ? run_length(new_build, j) : 0;
		int order = !old_n ? 1 : !new_n ? -1
		                                : strcmp(old->entries[i].key, new_build->entries[j].key);
		int failed = 0;
		if (order < 0)
			failed = add_change(out, BP_BASELINE_REMOVED, old, i, old_n, new_build, j, 0);
		else if (order > 0)
			failed = add_change(out, BP_BASELINE_ADDED, old, i, 0, new_build, j, new_n);
		else if (old_n != new_n || !same_signatures(&old->entries[i], &new_build->entries[j], old_n))
			failed = add_change(out, BP_BASELINE_CHANGED, old, i, old_n, new_build, j, new_n);
		if (failed) {
			bp_baseline_diff_free(out);
			return -1;
		}
		i += order <= 0 ? old_n : 0;
		j += order >= 0 ? new_n : 0;
	}
	return 0;
}

void bp_baseline_diff_free(bp_baseline_diff_t *d)
{
	free(d->items);
	memset(d, 0, sizeof *d);
}
