/*
 * check_modules.c -- the module column of `check`: for each probe of
 * the catalogue, the files that carry it.  A service linking
 * libbillingprobes.so carries the timing helpers' probes in the library
 * and the rest in its own file; saying which keeps a "missing" or an
 * "ok" explainable.  Paths are other people's text: escaped (text) or
 * JSON-encoded.
 */
#include "check_modules.h"

#include <string.h>

#include "output.h"
#include "term_text.h"

/* Does module m of set carry probe (provider, name)? */
static int carries(const pr_probe_set_t *set, size_t m, const char *provider, const char *name)
{
	for (size_t i = 0; i < set->probe_count; i++) {
		const pr_probe_t *p = &set->probes[i];
		if (p->module == m && strcmp(p->provider, provider) == 0 && strcmp(p->name, name) == 0)
			return 1;
	}
	return 0;
}

/* Call fn for each (catalogue probe, module carrying it), in order. */
typedef void (*row_fn)(FILE *out, const pr_catalogue_probe_t *want, const pr_module_t *mod, void *ctx);

static void each_row(FILE *out, const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets, row_fn fn,
                     void *ctx)
{
	for (size_t c = 0; c < cat->count; c++)
		for (size_t s = 0; s < nsets; s++)
			for (size_t m = 0; m < sets[s].module_count; m++)
				if (carries(&sets[s], m, cat->probes[c].provider, cat->probes[c].name))
					fn(out, &cat->probes[c], &sets[s].modules[m], ctx);
}

static void widest(FILE *out, const pr_catalogue_probe_t *want, const pr_module_t *mod, void *ctx)
{
	size_t *w = ctx, len = pr_escaped_width(want->provider) + 1 + pr_escaped_width(want->name);
	(void)out;
	(void)mod;
	if (len > *w)
		*w = len;
}

static void text_row(FILE *out, const pr_catalogue_probe_t *want, const pr_module_t *mod, void *ctx)
{
	const size_t *w = ctx;
	size_t len = pr_escaped_width(want->provider) + 1 + pr_escaped_width(want->name);
	pr_printf_escaped(out, "%s:%s", want->provider, want->name);
	for (; len < *w + 2; len++)
		fputc(' ', out);
	pr_put_escaped(out, mod->path);
	fputc('\n', out);
}

void bp_print_probe_modules(FILE *out, const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets)
{
	size_t w = 0;
	each_row(out, cat, sets, nsets, widest, &w);
	if (!w)
		return;
	if (w < 5)
		w = 5;
	fputs("PROBE", out);
	for (size_t k = 5; k < w + 2; k++)
		fputc(' ', out);
	fputs("MODULE\n", out);
	each_row(out, cat, sets, nsets, text_row, &w);
}

static void json_row(FILE *out, const pr_catalogue_probe_t *want, const pr_module_t *mod, void *ctx)
{
	int *first = ctx;
	bp_json_string(out, *first ? "\n  {\"provider\": " : ",\n  {\"provider\": ", want->provider);
	*first = 0;
	bp_json_string(out, ", \"name\": ", want->name);
	bp_json_string(out, ", \"module\": ", mod->path);
	fputc('}', out);
}

void bp_json_probe_modules(FILE *out, const pr_catalogue_t *cat, const pr_probe_set_t *sets, size_t nsets)
{
	int first = 1;
	fputs("\"present\": [", out);
	each_row(out, cat, sets, nsets, json_row, &first);
	fputs(first ? "], \"modules\": [" : "\n], \"modules\": [", out);
	first = 1;
	for (size_t s = 0; s < nsets; s++) {
		for (size_t m = 0; m < sets[s].module_count; m++) {
			const pr_module_t *mod = &sets[s].modules[m];
			size_t probes = 0;
			for (size_t i = 0; i < sets[s].probe_count; i++)
				probes += sets[s].probes[i].module == m;
			bp_json_string(out, first ? "\n  {\"path\": " : ",\n  {\"path\": ", mod->path);
			first = 0;
			bp_json_string(out, ", \"needed\": ", mod->needed_name);
			bp_json_string(out, ", \"needed_by\": ", mod->needed_by);
			fprintf(out, ", \"probes\": %zu}", probes);
		}
	}
	fputs(first ? "]" : "\n]", out);
}
