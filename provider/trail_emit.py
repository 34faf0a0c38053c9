"""The slow-request trails' generated half (lib/stats_trail.c is the
other), from billing.d's probes and its "@@slow-threshold" line:

  kinds()        one event kind per probe, with the arguments an event keeps:
                 its integers and strings, the request ID aside (it says
                 which request the event joins); the segment's description
                 names them in "trail" lines, so a reader built from another
                 billing.d prints them by name
  gen_h()        billing_trail_<probe>(), declared in billing/stats_gen.h
                 (probe_macros.h calls them in a stats build)
  gen_c()        their definitions, and the thresholds, in stats_gen.c
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
    o = ["/* Requests open now (lib/stats_trail.c): while none is, a probe that\n"
         " * is not request-start keeps no trail event and costs one load. */\n"
         "extern int billing_trail_open_;\n"
         "#define BILLING_TRAIL_OPEN_() (__atomic_load_n(&billing_trail_open_, __ATOMIC_RELAXED) != 0)\n\n"]
    for k in kinds(probes):
        o.append(f"void billing_trail_{k.probe.func}({params(k.probe)});\n")
    return "".join(o) + "\n"


def gen_c(ms):
    default, handlers = metrics.slow_thresholds_ns(ms)
    o = ["/* --- slow-request trails (lib/stats_trail.c) --- */\n\n"
         '#include "stats_trail_writer.h"\n\n'
         "/* @@slow-threshold: nanoseconds, the default and per handler. */\n"
         f"const uint64_t bs_slow_default_ns_ = {default}u;\n"
         f"const size_t bs_slow_nhandlers_ = {len(handlers)};\n"
         "const bs_slow_handler_t bs_slow_handlers_[] = {\n"
         + "".join(f"\t{{ {metrics.c_string(h)}, {ns}u }},\n" for h, ns in sorted(handlers.items()))
         + ("" if handlers else "\t{ NULL, 0 } /* C99 takes no empty list */\n") + "};\n\n"]
    for k in kinds(ms.probes):
        p = k.probe
        o.append(f"void billing_trail_{p.func}({params(p)})\n{{\n")
        if p.d_name in ("request__start", "request__done"):
            ints = ", ".join(f"(int64_t){n}" for n in k.ints) or "0"
            strs = ", ".join(k.strs) or "NULL"
            o.append(f"\tconst bs_trail_fire_t f = {{ {k.index}, {{ {ints} }}, {{ {strs} }} }};\n")
            o.append("\tbs_trail_start_(request_id, handler, &f);\n}\n\n" if p.d_name == "request__start" else
                     "\tbs_trail_done_(request_id, handler, status, duration_ns, &f);\n}\n\n")
            continue
        # the event written in place: no call on the way (lib/stats_trail_writer.h)
        o.append(f"\tuint64_t id = {REQUEST_ID if k.joins_by_id else '0'};\n\tbs_open_request_t *r;\n\tuint32_t i;\n"
                 f"\tstruct bs_trail_event *e = bs_trail_begin_(&id, {int(k.joins_by_id)}, {k.index}, &r, &i);\n\n"
                 "\tif (!e)\n\t\treturn;\n")
        for j in range(INTS):
            o.append(f"\te->ints[{j}] = {f'(int64_t){k.ints[j]}' if j < len(k.ints) else '0'};\n")
        cuts = [f"bs_trail_put_str_(r, i, {j}, {k.strs[j] if j < len(k.strs) else 'NULL'}, {k.index}) << {j}"
                for j in range(STRS)]
        o.append(f"\te->cut = (uint16_t)({' | '.join(cuts)});\n")
        o.append("\t__atomic_store_n(&r->owner[i], id, __ATOMIC_RELEASE);\n}\n\n")
    return "".join(o)
