/*
 * Fires every probe of billing.d with the sample arguments of
 * billing/probe_samples.h (generated from billing.d, values listed in
 * probe_samples.json), round after round: each probe through its macro,
 * then each timing helper pair.  Built with function probe sites for
 * tests/function_sites (meson, and -O2 -flto by gcc and clang).  Prints how
 * often a macro's first argument was evaluated: with function sites,
 * once per fire, traced or not.
 */
#include <stdio.h>

static int evaluations;
#define BILLING_SAMPLE_COUNT(x) (evaluations++, (x))
#include "billing/probe_samples.h"

int main(void)
{
	int k;

	for (k = 0; k < BILLING_SAMPLE_ROUNDS; k++) {
		billing_sample_fire_all(k);
		billing_sample_fire_timing(k);
	}
	printf("evaluations=%d\n", evaluations);
	return 0;
}
