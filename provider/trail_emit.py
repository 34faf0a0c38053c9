"""The slow-request trails' generated half (lib/stats_trail_writer.c is the
other), from billing.d's probes and its "@@slow-threshold" line:

  kinds()        one event kind per probe, with the arguments an event keeps:
                 its integers and strings, the request ID aside (it says
                 which request the event joins); the segment's description
                 names them in "trail" lines, so a reader built from another
                 billing.d prints them by name
  gen_h()        billing_trail_<probe>(), declared in billing/stats_gen.h
                 (probe_macros.h calls them in a stats build)
  gen_c()        their definitions, and the thresholds, in stats_gen.c; and
                 for the stats build's timing helpers there (stats_emit.py)
                 trail_try_<probe>_(), the event inline, timed by their span's
                 reading of the counter, and trail_slow_<probe>_()
"""

import metrics

REQUEST_ID = "request_id"
CTYPE = metrics.CTYPE
INTS, STRS = 4, 2  # BS_TRAIL_INTS, BS_TRAIL_STRS (lib/stats_trail.h)


class Kind:
    def __init__(self, index, probe):
        self.index = index
        self.probe = probe
        names = [n for n, _, _ in probe.args]
        self.joins_by_id = REQUEST_ID in names  # else: the request its thread last started
        self.ints = [n for n, t, _ in probe.args if t != "char *" and n != REQUEST_ID]
        self.strs = [n for n, t, _ in probe.args if t == "char *"]
        if len(self.ints) > INTS or len(self.strs) > STRS:
            raise metrics.MetricError(f"probe {probe.name}: a trail event keeps at most {INTS} integers and "
                                      f"{STRS} strings (lib/stats_trail.h)")


def kinds(probes):
    return [Kind(i, p) for i, p in enumerate(probes)]


def desc_lines(probes):
    """The description's "trail" lines, an event kind each, in order."""
    return [f"trail {k.probe.d_name} ints={','.join(k.ints) or '-'} strings={','.join(k.strs) or '-'}"
            for k in kinds(probes)]


def params(probe):
    return ", ".join(f"{CTYPE[t]}{'' if t == 'char *' else ' '}{n}" for n, t, _ in probe.args) or "void"


def gen_h(probes):
    o = ["/* 1 once a request kept a trail's place in this process (lib/stats_trail_writer.c):\n"
         " * until then a probe that is not request-start keeps no trail event and\n"
         " * costs one load; after, a probe outside any request costs a look at\n"
         " * its thread's request, or at its request ID's home place.  Set once:\n"
         " * no line that every request writes. */\n"
         "extern int billing_trail_open_;\n"
         "#define BILLING_TRAIL_OPEN_() (__atomic_load_n(&billing_trail_open_, __ATOMIC_RELAXED) != 0)\n\n"]
    for k in kinds(probes):
        o.append(f"void billing_trail_{k.probe.func}({params(k.probe)});\n")
    return "".join(o) + "\n"


# request-start and request-done as lib/stats_trail_writer.c takes them: the
# request's handler, and request-done's status and duration.
REQUEST_SHAPES = {"request__start": ([], ["handler"]), "request__done": (["status", "duration_ns"], ["handler"])}


def request_kind(ms, d_name):
    k = next((k for k in kinds(ms.probes) if k.probe.d_name == d_name), None)
    if k is None or (k.ints, k.strs) != REQUEST_SHAPES[d_name] or not k.joins_by_id:
        raise metrics.MetricError(f"probe {d_name.replace('__', '-')}: the trails take request_id, "
                                  f"{', '.join(REQUEST_SHAPES[d_name][1] + REQUEST_SHAPES[d_name][0])} "
                                  "(lib/stats_trail_writer.h)")
    return k


def fast_test(k, strings, words):
    """The test that a fire takes the fast path (lib/stats_trail_writer.h)."""
    return " && ".join(["BS_TRAIL_FAST_"] + [f"BS_TRAIL_FITS_({n}, {words})" for n in strings])


def event_body(k):
    """An event written in place: its words, then its strings' bytes, then
    its owner (lib/stats_trail_writer.h, bs_trail_begin_).  1 when done."""
    o = [f"\tuint32_t tag;\n\tint further = 0;\n"
         f"\tstruct bs_trail_event *e = bs_trail_begin_(fast, given, ticks, {REQUEST_ID if k.joins_by_id else '0'}, "
         f"{int(k.joins_by_id)}, {k.index}, &tag, &further);\n\n"
         "\tif (!e)\n\t\treturn !further;\n"]
    # only the kind's own: the commit clears the rest (bs_trail_kind_ints_, _strs_)
    for j in range(len(k.ints)):
        o.append(f"\te->ints[{j}] = (int64_t){k.ints[j]};\n")
    if k.strs:
        cuts = [f"bs_trail_put_(fast, e->strs[{j}], {k.strs[j]}, BS_TRAIL_STR / 8) << {j}" for j in range(len(k.strs))]
        o.append(f"\tunsigned cut = {' | '.join(cuts)};\n\n\tif (cut) /* rare: stored only then */\n"
                 "\t\te->cut = (uint16_t)cut;\n")
    o.append("\t__atomic_store_n(&e->owner, tag, __ATOMIC_RELEASE);\n\treturn 1;\n")
    return "".join(o)


def fire(k, body, try_body):
    """billing_trail_<probe>() over body; and for the stats build's timing
    helpers (stats_gen.c, stats_emit.timing_helpers), once the trails are
    known fast (bs_trail_go_): trail_try_<probe>_(), inline over try_body,
    the event timed by the counter as the helper read it for its span
    (ticks), 1 when done, 0 when the slow path must run (nothing done
    yet): trail_slow_<probe>_(), out of line.  Marked unused: only the
    probes a span times call it, and clang warns of the others."""
    p = k.probe
    return (f"void billing_trail_{p.func}({params(p)})\n{{\n{body}}}\n\n"
            f"static inline __attribute__((unused)) int trail_try_{p.func}_(uint64_t ticks, {params(p)})\n{{\n{try_body}}}\n\n")


def fast_and_slow(k, body, words):
    """billing_trail_<probe>() over a body written once as a function of
    `fast` (lib/stats_trail_writer.h, "fast and slow"), and of whether the
    caller read the counter (given: ticks)."""
    p, args = k.probe, ", ".join(n for n, _, _ in k.probe.args)
    params_ = params(p)
    fits = " && ".join(f"BS_TRAIL_FITS_({n}, {words})" for n in k.strs) or "1"
    return (f"static inline int trail_{p.func}_(int fast, int given, uint64_t ticks, {params_})\n{{\n{body}}}\n\n"
            f"static BS_NOINLINE_ void trail_slow_{p.func}_({params_})\n{{\n"
            f"\t(void)trail_{p.func}_(0, 0, 0, {args});\n}}\n\n"
            + fire(k, f"\tif (!({fast_test(k, k.strs, words)} && trail_{p.func}_(1, 0, 0, {args})))\n"
                      f"\t\ttrail_slow_{p.func}_({args});\n",
                   f"\treturn {fits} && trail_{p.func}_(1, 1, ticks, {args});\n"))


def gen_c(ms):
    default, handlers = metrics.slow_thresholds_ns(ms)
    start, done = request_kind(ms, "request__start"), request_kind(ms, "request__done")
    o = ["/* --- slow-request trails (lib/stats_trail_writer.c) --- */\n\n"
         '#include "stats_trail_writer.h"\n\n'
         "/* @@slow-threshold: nanoseconds, the default and per handler. */\n"
         f"const uint64_t bs_slow_default_ns_ = {default}u;\n"
         f"const size_t bs_slow_nhandlers_ = {len(handlers)};\n"
         "const bs_slow_handler_t bs_slow_handlers_[] = {\n"
         + "".join(f"\t{{ {metrics.c_string(h)}, {ns}u }},\n" for h, ns in sorted(handlers.items()))
         + ("" if handlers else "\t{ NULL, 0 } /* C99 takes no empty list */\n") + "};\n"
         f"const uint16_t bs_trail_start_kind_ = {start.index};\n"
         "/* Each event kind's integers and strings: a commit clears the others. */\n"
         f"const uint8_t bs_trail_kind_ints_[BS_TRAIL_KINDS] = {{ {', '.join(str(len(k.ints)) for k in kinds(ms.probes))} }};\n"
         f"const uint8_t bs_trail_kind_strs_[BS_TRAIL_KINDS] = {{ {', '.join(str(len(k.strs)) for k in kinds(ms.probes))} }};\n\n"]
    for k in kinds(ms.probes):
        p = k.probe
        if p.d_name == start.probe.d_name:  # what it cannot do fast, it does itself (a tail call)
            o.append(f"void billing_trail_{p.func}({params(p)})\n{{\n\tbs_trail_start_(request_id, handler);\n}}\n\n"
                     f"static inline void trail_start_at_(uint64_t ticks, {params(p)})\n{{\n"
                     "\tbs_trail_start_at_(1, ticks, request_id, handler);\n}\n\n")
        elif p.d_name == done.probe.d_name:  # a fast request-done reads no clock
            slow = f"bs_trail_done_slow_(request_id, handler, status, duration_ns, {k.index})"
            o.append(fire(k, "\tif (!bs_trail_done_fast_(request_id, duration_ns)) /* maybe slow */\n"
                             f"\t\t{slow};\n",
                          "\t(void)ticks;\n\t(void)handler;\n\t(void)status;\n"
                          "\treturn bs_trail_done_fast_(request_id, duration_ns);\n")
                     + f"static BS_NOINLINE_ void trail_slow_{p.func}_({params(p)})\n{{\n\t{slow};\n}}\n\n")
        else:
            o.append(fast_and_slow(k, event_body(k), "BS_TRAIL_STR / 8"))
    return "".join(o)
