/*
 * metric_table.c -- the maps and metrics fed by probes, as data (see
 * metric_table.h): each declared in billing.d (its "@@" lines), which
 * generates its row, map and BPF program.
 */
#include "metric_table.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* bx_quantities[], bx_maps[] and BX_PROBE_METRIC_ROWS: generated from
 * billing.d's "@@" declarations (provider/metrics.py). */
#include "metric_table_gen.h"

const bx_metric_t bx_metrics[] = { BX_PROBE_METRIC_ROWS };
const size_t bx_metric_count = sizeof bx_metrics / sizeof bx_metrics[0];

static const struct {
	const char *name;
	unsigned group;
} groups[] = { BX_GROUP_NAME_ROWS };

unsigned bx_group_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
		if (strcmp(groups[i].name, name) == 0)
			return groups[i].group;
	return 0;
}

const char *bx_group_name(unsigned group)
{
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
		if (groups[i].group == group)
			return groups[i].name;
	return "?";
}

char *bx_group_names(unsigned groups, const char *separator, char *names, size_t len)
{
	size_t used = 0;
	names[0] = '\0';
	for (unsigned g = 1; g & BX_GROUPS_PROBES && used < len; g <<= 1)
		if (groups & g)
			used += (size_t)snprintf(names + used, len - used, "%s%s", used ? separator : "", bx_group_name(g));
	return names;
}

unsigned bx_metric_group(const bx_metric_t *m)
{
	return m->map < 0 ? (unsigned)BX_GROUP_SELF : bx_maps[m->map].group;
}

const char *bx_metric_type_name(bx_metric_type_t t)
{
	return t == BX_COUNTER ? "counter" : t == BX_GAUGE ? "gauge"
	                                                   : "histogram";
}
