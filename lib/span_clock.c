/*
 * span_clock.c -- the span clock's out-of-line half (span_clock.h is its
 * fast path, inline): which clock spans are timed by, the slow paths, and
 * the monotonic clock (billing_clock_ns).
 *
 * A span is timed by the time-stamp counter where the kernel says it runs
 * at a constant rate through sleep states and keeps the monotonic clock by
 * it (constant_tsc, nonstop_tsc, clocksource tsc): an instruction at each
 * end instead of a clock_gettime().  Ticks become nanoseconds by the ratio
 * of both clocks since the first span began, read again once the process
 * has doubled its age since the last reading, and at most every 2^32
 * ticks (about a second) after: a span is never longer than twice the
 * interval its ratio was measured over, so it is within two monotonic
 * reads' jitter of what a pair of them would have said.  A start without
 * the mark bit (billing_clock_ns(), or no trusted counter) is timed by the
 * monotonic clock. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "billing/timing.h"
#include "span_clock.h"

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

int bs_span_tsc_;
uint64_t bs_span_ns_per_tick_, bs_span_until_;
int bs_span_fast_;
static int counting = 1; /* the stats count (bs_span_counting_); a build without them never says */

/* bs_span_fast_ from both: each of the (rare) writers of either reads
 * both again after its own write, so the last of them sees both. */
static void publish_fast(void)
{
	__atomic_store_n(&bs_span_fast_,
	                 __atomic_load_n(&bs_span_tsc_, __ATOMIC_SEQ_CST) > 0 && __atomic_load_n(&counting, __ATOMIC_SEQ_CST),
	                 __ATOMIC_SEQ_CST);
}

void bs_span_counting_(int on)
{
	__atomic_store_n(&counting, on, __ATOMIC_SEQ_CST);
	publish_fast();
}

#if BS_SPAN_TSC
#  define SETTLED_TICKS (1ull << 32) /* the ratio is read again at most this far apart, once settled */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t base_ns, base_ticks; /* both clocks when the first span began */
static uint64_t calibrated;          /* the ticks the ratio was last read at */

static inline uint64_t ticks(void)
{
	return __builtin_ia32_rdtsc();
}

/* The monotonic clock and the counter at (about) the same moment: the
 * counter's reads on either side of the clock's, halved. */
static uint64_t both_clocks(uint64_t *tk)
{
	uint64_t before = ticks(), ns = monotonic_ns(), after = ticks();
	*tk = before + (after - before) / 2;
	return ns;
}

/* Whether /proc/cpuinfo's flags name both, and the kernel keeps its clock
 * by the counter (it stops doing so when it finds the counter unreliable). */
static int tsc_trusted(void)
{
	char line[4096], source[32] = "";
	int flags = 0, constant = 0, nonstop = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");
	while (f && !flags && fgets(line, sizeof line, f))
		flags = strncmp(line, "flags", 5) == 0;
	if (flags) {
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
	}
	if (f)
		fclose(f);
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f && !fgets(source, sizeof source, f))
		source[0] = '\0';
	if (f)
		fclose(f);
	return constant && nonstop && strcmp(source, "tsc\n") == 0;
}

static void decide(void)
{
	int tsc = tsc_trusted();
	if (tsc) {
		base_ns = both_clocks(&base_ticks);
		calibrated = base_ticks;
	}
	__atomic_store_n(&bs_span_tsc_, tsc ? 1 : -1, __ATOMIC_SEQ_CST);
	publish_fast();
}

/* A span on the counter ending at ticks now, whose ratio is out of date
 * (or not read yet): the ratio of both clocks since the base, read again
 * and published by one thread. */
static uint64_t counter_span(uint64_t start, uint64_t now)
{
	uint64_t last = __atomic_load_n(&calibrated, __ATOMIC_RELAXED), tk, ns = both_clocks(&tk);
	uint64_t d = now - start;
	if ((int64_t)d <= 0 || tk <= base_ticks || ns <= base_ns)
		return 1;
	double ratio = (double)(ns - base_ns) / (double)(tk - base_ticks);
	uint64_t age = tk - base_ticks;
	if (__atomic_compare_exchange_n(&calibrated, &last, tk, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		__atomic_store_n(&bs_span_ns_per_tick_, (uint64_t)(ratio * 4294967296.0), __ATOMIC_RELAXED);
		/* after the ratio: a span that sees it sees the ratio */
		__atomic_store_n(&bs_span_until_, (tk + (age < SETTLED_TICKS ? age : SETTLED_TICKS)) | BS_SPAN_MARK,
		                 __ATOMIC_RELEASE);
	}
	ns = (uint64_t)((double)d * ratio);
	return ns ? ns : 1;
}
#endif

uint64_t bs_span_start_slow_(void)
{
#if BS_SPAN_TSC
	pthread_once(&once, decide);
	if (__atomic_load_n(&bs_span_tsc_, __ATOMIC_ACQUIRE) > 0)
		return ticks() | BS_SPAN_MARK;
#endif
	return monotonic_ns();
}

void bs_span_start_at_slow_(uint64_t *at)
{
	*at = bs_span_start_slow_();
}

uint64_t bs_span_ns_slow_(uint64_t start)
{
	uint64_t now;
#if BS_SPAN_TSC
	if (start & BS_SPAN_MARK)
		return counter_span(start & ~BS_SPAN_MARK, ticks());
#endif
	now = monotonic_ns();
	/* 0 means "not measured"; a real span is at least 1 ns. */
	return now > start ? now - start : 1;
}
