/*
 * redzone_leaf -- a leaf function that keeps 15 longs below its stack
 * pointer across a probe site, called N times (argument; default 1000000); prints how many calls
 * returned a wrong sum.
 *
 * Built three ways by meson.build (the same source each time):
 *   fast      5-byte site, -mno-red-zone: what -Dprobe_site=fast builds.
 *             The locals live above %rsp; must never be corrupted.
 *   standard  sys/sdt.h's 1-byte site, red zone in use: the int3 trap runs
 *             on the kernel stack; must never be corrupted.
 *   hazard    5-byte site WITH a red zone (BILLING_NO_RED_ZONE is defined
 *             without -mno-red-zone, on purpose, to get past the header's
 *             guard): the optimized uprobe's call writes into the red zone.
 *             It shows the hazard is real on this kernel, so a clean "fast"
 *             run means something.
 *
 * Output, one line: "calls=N wrong=W".
 */
#include <stdio.h>
#include <stdlib.h>

#include "billing/probes.h"
#include "loop_count.h"

#define SLOTS 15 /* 120 bytes: nearly all of the 128-byte red zone */

/* Leaf function (no calls once the probe's fire function is inlined), so
 * without -mno-red-zone the compiler keeps the volatile slots below %rsp
 * instead of moving the stack pointer. */
static __attribute__((noinline)) long
sum_across_probe(long seed)
{
	volatile long slots[SLOTS];
	long sum = 0;
	int i;

	for (i = 0; i < SLOTS; i++)
		slots[i] = seed + i;
	BILLING_ERROR((uint64_t)seed, "redzone", 1);
	for (i = 0; i < SLOTS; i++)
		sum += slots[i];
	return sum;
}

int main(int argc, char **argv)
{
	unsigned long long calls = loop_count(argc, argv, 1000000), n;
	long wrong = 0;

	if (calls == 0)
		return 2;
	for (n = 0; n < calls; n++) {
		long seed = (long)n * 1000;
		if (sum_across_probe(seed) != SLOTS * seed + SLOTS * (SLOTS - 1) / 2)
			wrong++;
	}
	printf("calls=%llu wrong=%ld\n", calls, wrong);
	return 0;
}
