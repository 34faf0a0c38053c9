/*
 * self_metrics.c -- the exporter's own metrics (self_metrics.h): each
 * row beside nothing but its function, in the order they are served.
 */
#include "self_metrics.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter.h"
#include "stats_layout.h"
#include "stats_segment.h"

/* A sample of m, labelled n1=v1 and n2=v2 when named: 0, or -1 when out
 * of memory. */
static int sample(bx_snapshot_t *s, const bx_metric_t *m, double value, const char *n1, const char *v1,
                  const char *n2, const char *v2)
{
	bx_sample_t *x = bx_snapshot_add(s, m, "", value);
	return x && (!n1 || bx_sample_label(x, n1, v1) == 0) && (!n2 || bx_sample_label(x, n2, v2) == 0) ? 0 : -1;
}

/* A target's label as the exposition may show it, kept with the snapshot. */
static const char *shown(bx_snapshot_t *s, const char *label)
{
	char buf[4 * PATH_MAX + 1];
	bx_label_sanitize(label, strlen(label), buf, sizeof buf);
	return bx_snapshot_own(s, buf);
}

static const char *hex(bx_snapshot_t *s, uint64_t v)
{
	char h[17];
	snprintf(h, sizeof h, "%016llx", (unsigned long long)v);
	return bx_snapshot_own(s, h);
}

static int self_target_up(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	for (size_t t = 0; t < ex->targets.count; t++)
		if (sample(s, m, bx_target_alive(&ex->targets.items[t]), "target", shown(s, ex->targets.items[t].label),
		           NULL, NULL) != 0)
			return -1;
	for (size_t t = 0; t < bx_stats_target_count(ex->stats); t++)
		if (sample(s, m, bx_stats_target_up(ex->stats, t), "target", shown(s, bx_stats_target_label(ex->stats, t)),
		           NULL, NULL) != 0)
			return -1;
	return 0;
}

/* Which path feeds each target: usdt (BPF) or stats (its segments). */
static int self_target_source(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	for (size_t t = 0; t < ex->targets.count; t++)
		if (sample(s, m, 1, "target", shown(s, ex->targets.items[t].label), "source", "usdt") != 0)
			return -1;
	for (size_t t = 0; t < bx_stats_target_count(ex->stats); t++)
		if (sample(s, m, 1, "target", shown(s, bx_stats_target_label(ex->stats, t)), "source", "stats") != 0)
			return -1;
	return 0;
}

static int self_build_info(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	(void)ex;
	return sample(s, m, 1, "version", BILLING_EXPORTER_VERSION, "probe_set",
	              hex(s, bs_desc_hash(billing_stats_desc_, strlen(billing_stats_desc_))));
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What USDT target t carries: its distinct billing probes, and a hash of
 * their names (FNV-1a 64, sorted, one a line): two targets with the same
 * hash carry the same probes. */
static size_t usdt_probe_set(const bx_target_t *t, uint64_t *hash)
{
	size_t n = 0, cap = 0;
	for (size_t k = 0; k < t->module_count; k++)
		cap += t->modules[k].probe_count;
	const char **names = cap ? malloc(cap * sizeof *names) : NULL;
	for (size_t k = 0; names && k < t->module_count; k++)
		for (size_t p = 0; p < t->modules[k].probe_count; p++)
			names[n++] = t->modules[k].probes[p];
	if (n)
		qsort(names, n, sizeof *names, by_text);
	size_t distinct = 0;
	*hash = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(names[i], names[i - 1]) == 0)
			continue;
		distinct++;
		for (const char *c = names[i]; *c; c++)
			*hash = (*hash ^ (unsigned char)*c) * 1099511628211ull;
		*hash = (*hash ^ '\n') * 1099511628211ull;
	}
	free(names);
	return distinct;
}

static int probe_set(bx_snapshot_t *s, const bx_metric_t *m, const char *target, const char *source, uint64_t hash,
                     size_t probes)
{
	char count[24];
	snprintf(count, sizeof count, "%zu", probes);
	bx_sample_t *x = bx_snapshot_add(s, m, "", 1);
	return x && bx_sample_label(x, "target", shown(s, target)) == 0 && bx_sample_label(x, "source", source) == 0 &&
	               bx_sample_label(x, "probe_set", hex(s, hash)) == 0 &&
	               bx_sample_label(x, "probes", bx_snapshot_own(s, count)) == 0
	           ? 0
	           : -1;
}

static int self_target_build_info(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	for (size_t t = 0; t < ex->targets.count; t++) {
		uint64_t hash;
		size_t probes = usdt_probe_set(&ex->targets.items[t], &hash);
		if (probe_set(s, m, ex->targets.items[t].label, "usdt", hash, probes) != 0)
			return -1;
	}
	for (size_t t = 0; t < bx_stats_target_count(ex->stats); t++) {
		uint64_t hash[16];
		size_t probes[16], n = bx_stats_target_probe_sets(ex->stats, t, hash, probes, 16);
		for (size_t i = 0; i < n && i < 16; i++)
			if (probe_set(s, m, bx_stats_target_label(ex->stats, t), "stats", hash[i], probes[i]) != 0)
				return -1;
	}
	return 0;
}

static int self_stats_segments_skipped(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	for (int r = BX_SKIP_NONE + 1; r < BX_SKIP_COUNT; r++)
		if (sample(s, m, (double)bx_stats_skipped(ex->stats, r), "reason", bx_skip_reasons[r], NULL, NULL) != 0)
			return -1;
	return 0;
}

/* --- per map of an enabled group ---------------------------------------- */

static int enabled(const bx_exporter_t *ex, size_t i)
{
	return (bx_maps[i].group & ex->groups) != 0;
}

static int self_probes_attached(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	for (size_t i = 0; i < bx_map_count; i++)
		if (enabled(ex, i) && sample(s, m, (double)ex->usdt.attached[i], "probe", bx_maps[i].probe, NULL, NULL) != 0)
			return -1;
	return 0;
}

/* Per label of each enabled map: the values counted under "other"
 * (labels.c) when slots, else the fires s shows under it. */
static int folded(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m, int slots)
{
	for (size_t i = 0; i < bx_map_count; i++)
		for (size_t f = 0; enabled(ex, i) && f < bx_maps[i].nfields; f++)
			if (sample(s, m, slots ? (double)ex->slots[i][f].folded_count : (double)s->folded_fires[i][f], "map",
			           bx_maps[i].map, "label", bx_maps[i].fields[f].arg) != 0)
				return -1;
	return 0;
}

static int self_label_values_folded_total(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	return folded(ex, s, m, 1);
}

static int self_folded_fires_total(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	return folded(ex, s, m, 0);
}

static int self_dropped_fires_total(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	uint64_t dropped[BX_MAP_COUNT];
	bx_usdt_dropped(&ex->usdt, dropped);
	for (size_t i = 0; i < bx_map_count; i++)
		if (enabled(ex, i) && sample(s, m, (double)dropped[i], "map", bx_maps[i].map, NULL, NULL) != 0)
			return -1;
	return 0;
}

/* The kernel's figure k (bx_usdt_program_stats) of every enabled program,
 * divided by per. */
static int program_stats(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m, int k, double per)
{
	for (size_t i = 0; i < bx_map_count; i++) {
		uint64_t figures[3];
		if (!enabled(ex, i))
			continue;
		bx_usdt_program_stats(&ex->usdt, bx_maps[i].probe, figures);
		if (sample(s, m, (double)figures[k] / per, "program", bx_maps[i].probe, NULL, NULL) != 0)
			return -1;
	}
	return 0;
}

static int self_bpf_program_runs_total(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	return program_stats(ex, s, m, 0, 1);
}

static int self_bpf_program_run_seconds_total(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	return program_stats(ex, s, m, 1, 1e9);
}

static int self_bpf_program_recursion_misses_total(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	return program_stats(ex, s, m, 2, 1);
}

static int self_scrape_duration_seconds(const bx_exporter_t *ex, bx_snapshot_t *s, const bx_metric_t *m)
{
	return sample(s, m, ex->last_scrape_seconds, NULL, NULL, NULL, NULL);
}

/* clang-format off: a table laid out by row */
const bx_self_metric_t bx_self_metrics[] = {
	BX_SELF(target_up, BX_GAUGE, "", "target",
	        "1 while the target (pid:N or binary:PATH) is alive / present, else 0."),
	BX_SELF(target_source, BX_GAUGE, "", "target,source",
	        "1 per target, with the path that feeds it: usdt (BPF through uprobes) or stats (its segment). target "
	        "is pid:N, binary:PATH or stats:DIR, a --stats-dir as given: what billing-probes slow and top read on "
	        "this host (docs/runbook.md)."),
	BX_SELF(build_info, BX_GAUGE, "", "version,probe_set",
	        "1, with the exporter's version and its probe set: the hash of the stats description its billing.d "
	        "makes, as billing_exporter_target_build_info shows a stats target's."),
	BX_SELF(target_build_info, BX_GAUGE, "", "target,source,probe_set,probes",
	        "1 per target and probe set it runs: usdt, the billing probes its modules carry (probe_set hashes "
	        "their names); stats, those that feed its segments' metrics (probe_set: the description's hash, "
	        "one series per billing.d among its segments). probes=\"0\": nothing to count there."),
	BX_SELF(stats_segments_skipped, BX_GAUGE, "", "reason",
	        "Stats segments whose latest reading is left out of the sums, by reason: unreadable; uid (--uid: "
	        "another owner); cgroup (--cgroup: its writer is outside); unattributed (its writer cannot be "
	        "placed: gone before it was seen, not this host's PID, not the file's owner, or a writer a "
	        "--binary may already count)."),
	BX_SELF(probes_attached, BX_GAUGE, "", "probe",
	        "Probe attachments (one per module and target) per probe."),
	BX_SELF(label_values_folded_total, BX_COUNTER, "", "map,label",
	        "Distinct label values counted under \"other\" once a label had " BX_TEXT(BX_LABEL_VALUES) " values."),
	BX_SELF(folded_fires_total, BX_COUNTER, "", "map,label",
	        "Fires counted under the label value \"other\": theirs came past the label's " BX_TEXT(BX_LABEL_VALUES) " values (known values never do), or their map was full."),
	/* A fire whose map is full goes to its fold map, which has room for
	 * every key a fold can make (billing_exporter_programs.h): this stays 0
	 * unless that room is wrong. */
	BX_SELF(dropped_fires_total, BX_COUNTER, "", "map",
	        "Fires not counted: their map (" BX_TEXT(BX_LABEL_SETS) " label sets) and its fold map were both "
	                                                                "full (the fold map has room for every folded label set, so this stays 0)."),
	BX_SELF(bpf_program_runs_total, BX_COUNTER, "", "program",
	        "Runs of each BPF program (0 unless kernel BPF stats are on: --bpf-stats)."),
	BX_SELF(bpf_program_run_seconds_total, BX_COUNTER, "seconds", "program",
	        "Time spent in each BPF program (0 unless kernel BPF stats are on: --bpf-stats)."),
	BX_SELF(bpf_program_recursion_misses_total, BX_COUNTER, "", "program",
	        "Fires the kernel skipped because a BPF program was already running on that CPU."),
	BX_SELF(scrape_duration_seconds, BX_GAUGE, "seconds", "",
	        "Time the previous snapshot took to read the maps and render."),
};
/* clang-format on */
const size_t bx_self_metric_count = sizeof bx_self_metrics / sizeof bx_self_metrics[0];
