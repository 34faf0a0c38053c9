/*
 * billing/probes.h -- the USDT probes of a billing service.
 *
 * Include this header and fire probes with BILLING_<PROBE>(...), e.g.
 *
 *     BILLING_PAYMENT_AUTH(payment_id, amount_minor, "EUR", "stripe-sim",
 *                          result, duration_ns);
 *
 * Every probe of provider/billing.d has two macros:
 *   BILLING_<PROBE>(args...)    fires the probe.  Its arguments are evaluated
 *                               only while a consumer (DTrace, bpftrace) is
 *                               attached: the is-enabled check is inside.
 *   BILLING_<PROBE>_ENABLED()   non-zero while a consumer is attached (or,
 *                               in a stats build, while the stats count
 *                               the probe: below); use it to skip work that
 *                               only feeds a probe.
 * Integer arguments must be integers (a double, pointer or struct is a
 * compile error); strings are const char * and NULL reaches the consumer
 * as "".  Built without probes, both macros compile to nothing but keep
 * the same type checks, so code that builds one way builds the other.
 * Built with -Dprobe_site=function, each probe is a call of
 * billing_fire_<probe>() for DTrace's pid provider and its arguments are
 * always evaluated (docs/function-sites.md).
 *
 * Include this header before <sys/sdt.h> (or do not include that at all):
 * sys/sdt.h included first yields probes without is-enabled semaphores.
 *
 * How one probe expands, e.g. BILLING_ERROR(id, "db", 5), through the
 * headers below ([build]: generated from billing.d into the build tree by
 * provider/generate.py or meson):
 *   probe_macros.h [build]  BILLING_ERROR(a, b, c) checks that a and c are
 *       integers (BILLING_PROBE_INTEGER_, unevaluated), then
 *       `if (BILLING_ERROR_ENABLED()) billing_probe_fire_error_(a, b, c);`
 *       so nothing is evaluated untraced.  The static inline function fixes
 *       the types (uint64_t, const char *, int32_t), counts the fire in a
 *       stats build, and passes each string through BILLING_PROBE_STR_
 *       (below) to BILLING_SDT_ERROR(a, b, c) when the semaphore is raised.
 *   probes_sdt.h [build]  dtrace -h's output renamed into BILLING_SDT_*:
 *       BILLING_SDT_ERROR_ENABLED() reads the semaphore
 *       billing_error_semaphore (a consumer raises it), BILLING_SDT_ERROR()
 *       is sys/sdt.h's DTRACE_PROBE3(billing, error, ...): a nop and a
 *       .note.stapsdt entry saying where each argument is (a register or
 *       memory, never an immediate: perf drops those).
 *   probe_site.h  which nop: sys/sdt.h's 1 byte, or the 5-byte fast site.
 *   probes_off.h [build]  instead of those two when probes are off:
 *       BILLING_SDT_ERROR_ENABLED() is (0), BILLING_SDT_ERROR() a no-op.
 *   probes_config.h [build]  which of them this build uses.
 */
#ifndef BILLING_PROBES_H
#define BILLING_PROBES_H

#include <stdint.h>

#include "billing/probes_config.h"

/* Function probe sites (-Dprobe_site=function, or
 * BILLING_PROBE_SITE_FORCE_FUNCTION for one translation unit): each probe
 * calls billing_fire_<probe>() for DTrace's pid provider; no USDT, and
 * BILLING_<PROBE>_ENABLED() is always 1 (docs/function-sites.md).
 *
 * The clang static analyser and Coverity see the no-op probes: the inline
 * assembly of a probe site means nothing to them.  Defining
 * BILLING_PROBES_DISABLE before the include compiles one translation unit
 * without probes in a build that has them. */
#if (BILLING_PROBE_SITE_FUNCTION || defined(BILLING_PROBE_SITE_FORCE_FUNCTION)) && \
    !defined(BILLING_PROBES_DISABLE)
#  include "billing/function_site_macros.h"
#elif BILLING_PROBES_SDT && !defined(BILLING_PROBES_DISABLE) && \
    !defined(__clang_analyzer__) && !defined(__COVERITY__)
#  if defined(_SYS_SDT_H) && !defined(_SDT_HAS_SEMAPHORES)
#    error "include billing/probes.h before <sys/sdt.h>: its probes would have no semaphores"
#  endif
#  include "billing/probes_sdt.h"
#  include "billing/probe_site.h"
#else
#  include "billing/probes_off.h"
#endif

/* Stats (libbillingprobes-stats, whose pkg-config Cflags carry
 * BILLING_STATS_FORCE): a probe that feeds a metric (billing.d's "@@" lines) also counts
 * every fire into this thread's slot of the process's stats segment.  Its
 * BILLING_<PROBE>_ENABLED() is true while the stats are on, traced or not,
 * so its arguments are evaluated on every fire and a duration guarded by
 * it is clocked: the metrics are the same whether someone traces.  Its
 * USDT site still fires only while its semaphore is raised.
 * BILLING_STATS=off in the environment turns the counting off at run time
 * (docs/stats.md), and _ENABLED() is then the semaphore alone again.
 * BILLING_STATS_DISABLE leaves one translation unit without stats. */
#if defined(BILLING_STATS_FORCE) && !defined(BILLING_PROBES_DISABLE) && \
    !defined(BILLING_STATS_DISABLE) && !defined(__clang_analyzer__) && !defined(__COVERITY__)
#  define BILLING_STATS_BUILD_ 1
#  include "billing/stats_gen.h"
#  define BILLING_STATS_ON_() (billing_stats_off_ == 0)
#else
#  define BILLING_STATS_BUILD_ 0
#  define BILLING_STATS_ON_() 0
#endif

#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#  define BILLING_PROBE_INLINE_ inline
#else
#  define BILLING_PROBE_INLINE_ __inline__
#endif

/* String arguments, only evaluated while traced.  A consumer's
 * copyinstr()/str() faults on NULL, so NULL becomes "".  And a BPF program
 * cannot fault a page in: a string literal whose page the process has not
 * yet touched reads as "" (or fails: "invalid address").  Reading the first
 * byte of what is passed, the "" for NULL included, makes it resident. */
static BILLING_PROBE_INLINE_ const char *billing_probe_str_(const char *s)
{
	if (!s)
		s = "";
	(void)*(const volatile char *)s;
	return s;
}
#define BILLING_PROBE_STR_(s) billing_probe_str_(s)

/* Integer arguments only: % is ill-formed for floating point, pointers and
 * structs in C and C++ alike.  sizeof keeps the operand unevaluated. */
#define BILLING_PROBE_INTEGER_(x) ((void)sizeof((x) % 1))

/* sys/sdt.h passes an empty variadic argument list to its own macros,
 * which clang -pedantic reports where our inline probe functions expand:
 * under the GNU extension's name up to clang 16, as a C23 or C++20
 * extension from clang 17 (Debian 13's clang 19, sid's 21). */
#if defined(__clang__)
#  pragma clang diagnostic push
#  pragma clang diagnostic ignored "-Wgnu-zero-variadic-macro-arguments"
#  if __has_warning("-Wc23-extensions")
#    pragma clang diagnostic ignored "-Wc23-extensions"
#  endif
#  if __has_warning("-Wc++20-extensions")
#    pragma clang diagnostic ignored "-Wc++20-extensions"
#  endif
#endif
#include "billing/probe_macros.h"
#if defined(__clang__)
#  pragma clang diagnostic pop
#endif

#endif /* BILLING_PROBES_H */
