/*
 * Fires every probe of billing.d through its macro, one round of sample
 * arguments after another (billing/probe_samples.h, generated from
 * billing.d), then exits.  The consumers tests attach perf and gdb to it
 * and compare what they read with probe_samples.json.
 */
#include "billing/probe_samples.h"

int main(void)
{
	int k;

	for (k = 0; k < BILLING_SAMPLE_ROUNDS; k++)
		billing_sample_fire_all(k);
	return 0;
}
