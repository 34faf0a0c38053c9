/* The run-time probe catalogue: lookups over the tables generated from
 * provider/billing.d. */
#include <string.h>

#include "billing/catalogue.h"
#include "billing/probes_config.h"
#include "catalogue_data.h"

const char *billing_catalogue_provider(void)
{
	return billing_catalogue_provider_;
}

const billing_probe_info_t *billing_catalogue(size_t *count)
{
	if (count)
		*count = billing_catalogue_count_;
	return billing_catalogue_probes_;
}

const billing_probe_info_t *billing_catalogue_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < billing_catalogue_count_; i++) {
		const billing_probe_info_t *p = &billing_catalogue_probes_[i];
		if (strcmp(p->name, name) == 0 || strcmp(p->sdt_name, name) == 0)
			return p;
	}
	return NULL;
}

const char *billing_arg_type_name(billing_arg_type_t type)
{
	switch (type) {
	case BILLING_ARG_UINT64: return "uint64";
	case BILLING_ARG_INT64: return "int64";
	case BILLING_ARG_INT32: return "int32";
	case BILLING_ARG_STRING: return "string";
	}
	return "unknown";
}

int billing_probes_compiled_in(void)
{
	return BILLING_PROBES_SDT || BILLING_PROBE_SITE_FUNCTION;
}
