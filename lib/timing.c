/* The timing helpers' clock pair, billing_clock_if and billing_elapsed_ns:
 * the span clock's fast path (span_clock.h), its slow paths and the
 * monotonic clock out of line in span_clock.c.  The begin/end pairs
 * themselves are generated from billing.d (timing_gen.c in the build
 * directory). */
#include "billing/probes.h"
#include "billing/timing.h"
#include "span_clock.h"

uint64_t billing_clock_if(int wanted)
{
	return bs_span_start_(wanted);
}

uint64_t billing_elapsed_ns(uint64_t start_ns)
{
	return bs_span_ns_(start_ns);
}
