/* The clock behind the timing helpers.  The begin/end pairs themselves
 * are generated from billing.d (timing_gen.c in the build directory). */
#include <time.h>

#include "billing/probes.h"
#include "billing/timing.h"

/* The one clock read, static so the exported helpers reach it without a
 * call through the PLT (an exported function may be interposed, so the
 * compiler cannot inline billing_clock_ns into its neighbours). */
static inline uint64_t monotonic_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t billing_clock_ns(void)
{
	return monotonic_ns();
}

uint64_t billing_clock_if(int wanted)
{
	return wanted ? monotonic_ns() : 0;
}

uint64_t billing_elapsed_ns(uint64_t start_ns)
{
	uint64_t now;

	if (start_ns == 0)
		return 0;
	now = monotonic_ns();
	/* 0 means "not measured"; a real span is at least 1 ns. */
	return now > start_ns ? now - start_ns : 1;
}
