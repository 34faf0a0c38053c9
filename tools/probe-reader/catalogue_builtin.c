/*
 * catalogue_builtin.c -- the catalogue compiled into the tool: billing.d's
 * probes as lib/ generated them (catalogue_data.c), so the tool needs no
 * installed billing.d and works from a build tree.  `--provider FILE.d`
 * (catalogue_d.c) replaces it.
 */
#include "probe_reader.h"

#include <stdlib.h>
#include <string.h>

#include "catalogue_data.h"

/* The width a probe site stores, as the public macros cast each type. */
static int arg_width(billing_arg_type_t type)
{
	switch (type) {
	case BILLING_ARG_UINT64: return 8;
	case BILLING_ARG_INT64: return 8;
	case BILLING_ARG_INT32: return 4;
	case BILLING_ARG_STRING: return (int)sizeof(const char *);
	}
	return 0;
}

int pr_catalogue_builtin(pr_catalogue_t *out)
{
	memset(out, 0, sizeof *out);
	out->probes = calloc(billing_catalogue_count_ ? billing_catalogue_count_ : 1, sizeof *out->probes);
	if (!out->probes)
		return -1;
	for (size_t i = 0; i < billing_catalogue_count_; i++) {
		const billing_probe_info_t *info = &billing_catalogue_probes_[i];
		pr_catalogue_probe_t *p = &out->probes[i];
		p->provider = strdup(billing_catalogue_provider_);
		p->name = strdup(info->sdt_name);
		out->count++;
		if (!p->provider || !p->name) {
			pr_catalogue_free(out);
			return -1;
		}
		p->nargs = (int)info->nargs;
		for (size_t a = 0; a < info->nargs && a < PR_CATALOGUE_MAX_ARGS; a++)
			p->arg_size[a] = arg_width(info->args[a].type);
	}
	return 0;
}
