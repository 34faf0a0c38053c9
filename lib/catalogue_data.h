/* The tables generated from provider/billing.d (catalogue_data.c in the
 * build directory) behind billing/catalogue.h.  Private to the library. */
#ifndef BILLING_CATALOGUE_DATA_H
#define BILLING_CATALOGUE_DATA_H

#include "billing/catalogue.h"

extern const char billing_catalogue_provider_[];
extern const billing_probe_info_t billing_catalogue_probes_[];
extern const size_t billing_catalogue_count_;

#endif
