/*
 * Prints the run-time catalogue (billing/catalogue.h), one probe a line:
 *     PROVIDER NAME SDT_NAME TYPE TYPE ...
 * for test_catalogue_matches.py to compare with billing.d.
 */
#include <stdio.h>

#include "billing/catalogue.h"

int main(void)
{
	size_t count, i, j;
	const billing_probe_info_t *probes = billing_catalogue(&count);

	for (i = 0; i < count; i++) {
		printf("%s %s %s", billing_catalogue_provider(), probes[i].name, probes[i].sdt_name);
		for (j = 0; j < probes[i].nargs; j++)
			printf(" %s", billing_arg_type_name(probes[i].args[j].type));
		printf("\n");
	}
	return 0;
}
