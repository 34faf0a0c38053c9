/*
 * metric_table.c -- the maps and metrics of billing-exporter, as data.
 * See metric_table.h.  A metric fed by a probe is declared in billing.d
 * (its "@@" lines), which generates its row, map and BPF program; only the
 * exporter's own metrics are written here.
 */
#include "metric_table.h"

#include <stddef.h>
#include <string.h>

#include "billing_exporter.h"

/* bx_quantities[], bx_maps[] and BX_PROBE_METRIC_ROWS: generated from
 * billing.d's "@@" declarations (provider/metrics.py). */
#include "metric_table_gen.h"

#define SELF(name, type, unit, labels, help) \
  { \
    name, type, unit, help, -1, BX_SRC_SELF, -1, BX_WHERE_ALL, 0, { { NULL, BX_DEC_VALUE, 0, NULL, NULL } }, labels \
  }

/* clang-format off: a table laid out by column */
const bx_metric_t bx_metrics[] = {
	BX_PROBE_METRIC_ROWS,
	/* The exporter's own: computed in snapshot.c. */
	SELF("billing_exporter_target_up", BX_GAUGE, "", "target",
	     "1 while the target (pid:N or binary:PATH) is alive / present, else 0."),
	SELF("billing_exporter_target_source", BX_GAUGE, "", "target,source",
	     "1 per target, with the path that feeds it: usdt (BPF through uprobes) or stats (its segment)."),
	SELF("billing_exporter_build_info", BX_GAUGE, "", "version,probe_set",
	     "1, with the exporter's version and its probe set: the hash of the stats description its billing.d "
	     "makes, as billing_exporter_target_build_info shows a stats target's."),
	SELF("billing_exporter_target_build_info", BX_GAUGE, "", "target,source,probe_set,probes",
	     "1 per target and probe set it runs: usdt, the billing probes its modules carry (probe_set hashes "
	     "their names); stats, those that feed its segments' metrics (probe_set: the description's hash, "
	     "one series per billing.d among its segments). probes=\"0\": nothing to count there."),
	SELF("billing_exporter_stats_segments_skipped", BX_GAUGE, "", "reason",
	     "Stats segments whose latest reading is left out of the sums, by reason: unreadable; uid (--uid: "
	     "another owner); cgroup (--cgroup: its writer is outside); unattributed (its writer cannot be "
	     "placed: gone before it was seen, not this host's PID, not the file's owner, or a writer a "
	     "--binary may already count)."),
	SELF("billing_exporter_probes_attached", BX_GAUGE, "", "probe",
	     "Probe attachments (one per module and target) per probe."),
	SELF("billing_exporter_label_values_folded_total", BX_COUNTER, "", "map,label",
	     "Distinct label values counted under \"other\" once a label had " BX_TEXT(BX_LABEL_VALUES) " values."),
	SELF("billing_exporter_folded_fires_total", BX_COUNTER, "", "map,label",
	     "Fires counted under the label value \"other\": theirs came past the label's " BX_TEXT(BX_LABEL_VALUES) " values (known values never do), or their map was full."),
	/* A fire whose map is full goes to its fold map, which has room for
	 * every key a fold can make (billing_exporter_programs.h): this stays 0
	 * unless that room is wrong. */
	SELF("billing_exporter_dropped_fires_total", BX_COUNTER, "", "map",
	     "Fires not counted: their map (" BX_TEXT(BX_LABEL_SETS) " label sets) and its fold map were both "
	                                                             "full (the fold map has room for every folded label set, so this stays 0)."),
	SELF("billing_exporter_bpf_program_runs_total", BX_COUNTER, "", "program",
	     "Runs of each BPF program (0 unless kernel BPF stats are on: --bpf-stats)."),
	SELF("billing_exporter_bpf_program_run_seconds_total", BX_COUNTER, "seconds", "program",
	     "Time spent in each BPF program (0 unless kernel BPF stats are on: --bpf-stats)."),
	SELF("billing_exporter_bpf_program_recursion_misses_total", BX_COUNTER, "", "program",
	     "Fires the kernel skipped because a BPF program was already running on that CPU."),
	SELF("billing_exporter_scrape_duration_seconds", BX_GAUGE, "seconds", "",
	     "Time the previous snapshot took to read the maps and render."),
};
/* clang-format on */
const size_t bx_metric_count = sizeof bx_metrics / sizeof bx_metrics[0];

static const struct {
	const char *name;
	unsigned group;
} groups[] = { BX_GROUP_NAME_ROWS };

unsigned bx_group_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
		if (strcmp(groups[i].name, name) == 0)
			return groups[i].group;
	return 0;
}

const char *bx_group_name(unsigned group)
{
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
		if (groups[i].group == group)
			return groups[i].name;
	return "?";
}

unsigned bx_metric_group(const bx_metric_t *m)
{
	return m->map < 0 ? (unsigned)BX_GROUP_SELF : bx_maps[m->map].group;
}
