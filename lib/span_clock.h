/*
 * span_clock.h -- the clock spans are timed by (billing_clock_if and
 * billing_elapsed_ns, the generated begin/end pairs): the time-stamp
 * counter where the kernel keeps the monotonic clock by it, else the
 * monotonic clock.  lib/span_clock.c says how ticks become nanoseconds; this
 * header is the fast path the library's helpers inline.
 */
#ifndef BILLING_SPAN_CLOCK_H
#define BILLING_SPAN_CLOCK_H

#include <stdint.h>

#if defined(__GNUC__)
#  define BS_SPAN_HIDDEN __attribute__((visibility("hidden")))
#else
#  define BS_SPAN_HIDDEN
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#  define BS_SPAN_TSC 1
#else
#  define BS_SPAN_TSC 0
#endif

#define BS_SPAN_MARK (1ull << 63) /* a start on the counter: its ticks | BS_SPAN_MARK */

/* 1: spans use the counter; 0: not decided yet; -1: the monotonic clock. */
BS_SPAN_HIDDEN extern int bs_span_tsc_;
/* Nanoseconds per tick << 32, good for a span that ends before the
 * counter (with BS_SPAN_MARK set) reaches bs_span_until_, which is
 * published after it (0: none yet). */
BS_SPAN_HIDDEN extern uint64_t bs_span_ns_per_tick_;
BS_SPAN_HIDDEN extern uint64_t bs_span_until_;

/* The slow paths (lib/span_clock.c): the first start (which decides the
 * clock), a monotonic start, and a span whose ratio is read again. */
BS_SPAN_HIDDEN uint64_t bs_span_start_slow_(void);
BS_SPAN_HIDDEN void bs_span_start_at_slow_(uint64_t *at);
BS_SPAN_HIDDEN uint64_t bs_span_ns_slow_(uint64_t start);

/* A span's start (0 when not wanted): a mark for bs_span_ns_(). */
static inline uint64_t bs_span_start_(int wanted)
{
	if (!wanted)
		return 0;
#if BS_SPAN_TSC
	if (__atomic_load_n(&bs_span_tsc_, __ATOMIC_ACQUIRE) > 0)
		return __builtin_ia32_rdtsc() | BS_SPAN_MARK;
#endif
	return bs_span_start_slow_();
}

/* The same into *at, the slow path a tail call (a caller with nothing
 * else to do saves no register). */
static inline void bs_span_start_at_(uint64_t *at, int wanted)
{
	if (!wanted) {
		*at = 0;
		return;
	}
#if BS_SPAN_TSC
	if (__atomic_load_n(&bs_span_tsc_, __ATOMIC_ACQUIRE) > 0) {
		*at = __builtin_ia32_rdtsc() | BS_SPAN_MARK;
		return;
	}
#endif
	bs_span_start_at_slow_(at);
}

/* 1 while spans are timed by the counter and the stats count (lib/stats_writer.c
 * says, bs_span_counting_): the stats build's timing helpers' one test
 * (stats_gen.c). */
BS_SPAN_HIDDEN extern int bs_span_fast_;
BS_SPAN_HIDDEN void bs_span_counting_(int on);

#if BS_SPAN_TSC
/* The nanoseconds from start, a mark on the counter, to ticks, the
 * counter read now, into *ns: 1, or 0 when the ratio must be read again
 * (bs_span_ns_slow_).  For a caller that keeps the reading for more than
 * the span (the stats build's timing helpers give it to the trail event). */
static inline int bs_span_ns_fast_(uint64_t start, uint64_t ticks, uint64_t *ns)
{
	uint64_t now = ticks | BS_SPAN_MARK, d = now - start;
	if (now < __atomic_load_n(&bs_span_until_, __ATOMIC_ACQUIRE) && (int64_t)d > 0) {
		__extension__ typedef unsigned __int128 u128;
		*ns = (uint64_t)(((u128)d * __atomic_load_n(&bs_span_ns_per_tick_, __ATOMIC_RELAXED)) >> 32);
		*ns += !*ns;
		return 1;
	}
	return 0;
}
#endif

/* Nanoseconds since start (0: not clocked, so not measured; a real span
 * is at least 1 ns). */
static inline uint64_t bs_span_ns_(uint64_t start)
{
#if BS_SPAN_TSC
	uint64_t ns;
	if ((start & BS_SPAN_MARK) && bs_span_ns_fast_(start, __builtin_ia32_rdtsc(), &ns))
		return ns;
#endif
	return start ? bs_span_ns_slow_(start) : 0;
}

#endif /* BILLING_SPAN_CLOCK_H */
