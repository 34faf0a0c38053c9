/*
 * metric_check.c -- the exporter's table and BPF programs are generated
 * from billing.d at build time; the catalogue in libbillingprobes is
 * generated from it too.  Checking one against the other at every start
 * catches a build that mixed two versions of billing.d (a stale generated
 * file, an installed library from another release): the argument
 * positions the programs read, their names and types.
 */
#include "metric_table.h"

#include <stdio.h>
#include <string.h>

#include "billing/catalogue.h"

static int arg_is(const billing_probe_info_t *p, int pos, const char *name, billing_arg_type_t type,
                  char *err, size_t errlen)
{
	if (pos < 0 || (size_t)pos >= p->nargs || strcmp(p->args[pos].name, name) != 0 ||
	    p->args[pos].type != type) {
		snprintf(err, errlen, "metric table out of date with billing.d: %s reads argument %d as %s %s, "
		                      "billing.d has %s",
		         p->sdt_name, pos, billing_arg_type_name(type), name,
		         pos >= 0 && (size_t)pos < p->nargs ? p->args[pos].name : "no such argument");
		return -1;
	}
	return 0;
}

int bx_metric_table_check(char *err, size_t errlen)
{
	if (strcmp(billing_catalogue_provider(), "billing") != 0) {
		snprintf(err, errlen, "the catalogue's provider is %s, not billing", billing_catalogue_provider());
		return -1;
	}
	for (size_t i = 0; i < bx_map_count; i++) {
		const bx_map_desc_t *m = &bx_maps[i];
		const billing_probe_info_t *p = billing_catalogue_find(m->probe);
		if (!p || strcmp(p->sdt_name, m->probe) != 0) {
			snprintf(err, errlen, "metric table names probe %s, which billing.d does not declare", m->probe);
			return -1;
		}
		for (size_t f = 0; f < m->nfields; f++) {
			const bx_key_field_t *kf = &m->fields[f];
			if (arg_is(p, kf->arg_pos, kf->arg,
			           kf->kind == BX_KEY_STRING ? BILLING_ARG_STRING : BILLING_ARG_INT32, err, errlen))
				return -1;
		}
		for (size_t q = 0; q < m->nquantities; q++) {
			const bx_quantity_t *qt = &bx_quantities[m->quantities[q].quantity];
			if (arg_is(p, m->quantities[q].arg_pos, qt->arg,
			           qt->is_signed ? BILLING_ARG_INT64 : BILLING_ARG_UINT64, err, errlen))
				return -1;
		}
	}
	for (size_t k = 0; k < bx_metric_count; k++) {
		const bx_metric_t *mt = &bx_metrics[k];
		if (mt->source == BX_SRC_SELF)
			continue;
		for (size_t l = 0; l < mt->nlabels; l++)
			if (mt->labels[l].decode != BX_DEC_CONSTANT &&
			    (size_t)mt->labels[l].field >= bx_maps[mt->map].nfields) {
				snprintf(err, errlen, "%s: label %s names no key field", mt->name, mt->labels[l].name);
				return -1;
			}
	}
	return 0;
}
