/*
 * metric_check.c -- billing.d is the only place a probe is defined: the
 * exporter holds no probe list of its own, it checks the positions its
 * BPF programs read (billing_exporter.h) against the run-time catalogue
 * generated from billing.d, at every start and in the tests.
 */
#include "metric_check.h"

#include <stdio.h>
#include <string.h>

#include "billing/catalogue.h"
#include "metric_table.h"

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
	if (!bx_bounds_consistent()) {
		snprintf(err, errlen, "histogram bounds differ between billing_exporter.h and metric_table.c");
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
		if (m->amount_pos != BX_NO_ARG &&
		    arg_is(p, m->amount_pos, "amount_minor", BILLING_ARG_INT64, err, errlen))
			return -1;
		if (m->duration_pos != BX_NO_ARG &&
		    arg_is(p, m->duration_pos, "duration_ns", BILLING_ARG_UINT64, err, errlen))
			return -1;
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
