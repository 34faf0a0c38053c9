/*
 * exemplar.c -- which exemplar a writer may show beside a sample
 * (format.h): shared by the text writers (format.c) and the protobuf one
 * (format_protobuf.c), so neither reaches into the other.
 */
#include "format.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* b is the bucket after a in one series: same family, labels but le. */
static int next_bucket(const bx_sample_t *a, const bx_sample_t *b)
{
	if (!a || a->metric != b->metric || strcmp(a->suffix, "_bucket") != 0 || a->nlabels != b->nlabels)
		return 0;
	for (size_t i = 0; i < a->nlabels; i++)
		if (strcmp(a->label_names[i], "le") != 0 &&
		    (strcmp(a->label_names[i], b->label_names[i]) != 0 ||
		     strcmp(a->label_values[i], b->label_values[i]) != 0))
			return 0;
	return 1;
}

int bx_exemplar_of(const bx_exemplar_source_t *src, const bx_sample_t *prev, const bx_sample_t *x,
                   bx_exemplar_t *out)
{
	const char *le = bx_sample_label_value(x, "le");
	double lower = -INFINITY, upper = INFINITY;
	if (!src)
		return 0;
	if (le && strcmp(x->suffix, "_bucket") == 0) {
		const char *prev_le = next_bucket(prev, x) ? bx_sample_label_value(prev, "le") : NULL;
		upper = strtod(le, NULL);
		lower = prev_le ? strtod(prev_le, NULL) : -INFINITY;
	} else if (x->metric->type != BX_COUNTER) {
		return 0;
	}
	if (!src->latest(src->ctx, x, lower, upper, out))
		return 0;
	return out->value > lower && out->value <= upper && isfinite(out->value) && out->timestamp > 0 &&
	       out->timestamp < BX_EXEMPLAR_LATEST;
}
