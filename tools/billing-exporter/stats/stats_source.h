/*
 * stats_source.h -- billing-exporter reading stats segments (docs/stats.md):
 * no BPF, no root, only read access to the segment files.
 *
 * A stats target is a directory of segments (--stats-dir: every process of
 * a service, summed) or one process whose segment is found from its PID
 * (--pid with --source auto|stats).  Whose a directory or a file is, and
 * which process wrote a segment, come from the kernel (stats_trust.h,
 * proc_identity.h), never from the segment's header alone.  A process
 * counts once: a directory's segment whose writer a --pid or a --binary
 * counts is not summed again.  Service counters never go backwards while
 * the exporter runs: what a segment counted stays in its target's sums
 * whether its process exited, or its file went away or turned unreadable.
 * A scrape reads what changed (stats_state.h: the rooms and a segment's
 * stages).
 */
#ifndef BX_STATS_SOURCE_H
#define BX_STATS_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "samples.h"
#include "cgroup_filter.h"
#include "labels.h"
#include "map_row.h"
#include "stats_trust.h" /* BX_FILE_*: the first skip reasons */
#include "targets.h"

enum { BX_SOURCE_AUTO,
       BX_SOURCE_STATS,
       BX_SOURCE_USDT };

/* "auto" -> BX_SOURCE_AUTO ...; -1 for an unknown name. */
int bx_source_by_name(const char *name);

typedef struct bx_stats bx_stats_t;

/* Who the stats targets' segments are counted for, set before
 * bx_stats_setup(): --uid (-1 all), --cgroup (NULL all), and the --binary
 * targets (read later), whose processes are theirs to count. */
typedef struct bx_stats_scope {
	long only_uid;
	const bx_cgroup_t *cgroup;
	const bx_targets_t *usdt;
} bx_stats_scope_t;

/* Take the targets the stats serve, for scope: every directory (refused unless its
 * owner and mode pass, or named twice), and each PID whose segment is
 * found (source auto or stats; with stats a PID without one is an error,
 * saying where it looked).  Every PID is remembered, whichever source
 * serves it, so no directory counts its process again; a PID named twice
 * is an error.  PIDs left for USDT stay in pids[0, *npids).  0, or -1 with
 * a one-line reason in err. */
int bx_stats_setup(bx_stats_t **st, const bx_stats_scope_t *scope, int source, const char **pids, size_t *npids, const char **dirs,
                   size_t ndirs, char *err, size_t errlen);

/* A --pid served from its stats segment whose process a --binary counts
 * too (through USDT) refused: 0, or -1 with a one-line reason in err. */
int bx_stats_check_overlap(const bx_stats_t *st, char *err, size_t errlen);

/* The first reading, once every target is read and before any probe is
 * attached: a segment whose writer is gone by then was never counted
 * through USDT too. */
void bx_stats_start(bx_stats_t *st);

/* Rescan and read every stats target, each segment's changes added to its
 * target's sums (call under the exporter's lock, once per snapshot, before the
 * rows).  natives 0: the snapshot serves no native buckets, and a running
 * writer's native cells are left behind its counts, read by the next
 * refresh that asks for them. */
void bx_stats_refresh(bx_stats_t *st, int natives);

/* Append map mi's rows from the stats targets to rows, their labels
 * admitted into slots (map mi's, one per key field); 0, or -1 when out of
 * memory. */
int bx_stats_rows(bx_stats_t *st, size_t mi, bx_label_slot_t *slots, bx_rows_t *rows);

/* Why a segment's latest reading was left out (its earlier readings, if
 * any, stay in the sums): it could not be read (or is not a regular file
 * nobody else may write); another user than the directory's (or --uid's)
 * owns it; --cgroup: its writer is outside the subtree; its writer cannot
 * be told (gone before it was first seen, not this host's PID, not the
 * file's user's; or, with a --binary, whether that counts it). */
enum { BX_SKIP_NONE,
       BX_SKIP_UNREADABLE = PR_FILE_UNREADABLE, /* pr_stats_file_open() says these two */
       BX_SKIP_UID = PR_FILE_OTHER_USER,
       BX_SKIP_CGROUP,
       BX_SKIP_UNATTRIBUTED,
       BX_SKIP_COUNT };
extern const char *const bx_skip_reasons[BX_SKIP_COUNT]; /* label values: "unreadable", ... */
/* Segments whose latest reading was left out for reason, now. */
size_t bx_stats_skipped(const bx_stats_t *st, int reason);

size_t bx_stats_target_count(const bx_stats_t *st);
const char *bx_stats_target_label(const bx_stats_t *st, size_t i);
int bx_stats_target_up(const bx_stats_t *st, size_t i);
/* The probe sets among stats target i's segments as last read, each once:
 * its description's hash and how many probes feed its maps; how many
 * there are (at most cap are written). */
size_t bx_stats_target_probe_sets(const bx_stats_t *st, size_t i, uint64_t *hash, size_t *probes, size_t cap);

/* The latest slow request per duration bucket, from the segments taken
 * (trail_exemplars.c); NULL when there is none to give. */
const bx_exemplar_source_t *bx_stats_exemplars(const bx_stats_t *st);

void bx_stats_free(bx_stats_t *st);

/* --- families only segments describe (foreign_families.c) ---------------- */

/* A family a segment describes stays in its own namespace: it may not
 * take a name Prometheus gives series of its own (these, and names that
 * begin with these prefixes), a name of this exporter's own, the series of
 * another family (the same name once every trailing _total, _created,
 * _count, _sum and _bucket is taken off), or a label name that scrapes and
 * the fleet (deploy/fleet/) attach.  Each refused family is one line, not
 * served. */
#define BX_FOREIGN_RESERVED_NAMES "up ALERTS ALERTS_FOR_STATE"
#define BX_FOREIGN_RESERVED_PREFIXES "scrape_ billing_exporter_ __"
#define BX_FOREIGN_RESERVED_LABELS "job instance host service billing_probes"

/* A table family's rows that stats segments describe by their own
 * descriptions, where this exporter's tables do not hold their map in
 * that shape (foreign_families.c), per label set. */
typedef struct bx_parts {
	bx_series_t *items;
	size_t n, cap;
} bx_parts_t;

/* Every stats reading's families looked at once per snapshot: a table
 * family's rows from maps of another shape (summed with the table's when
 * described alike, else one line), and the families the tables do not
 * name (emitted after the table's).  NULL when out of memory. */
typedef struct bx_foreign bx_foreign_t;
bx_foreign_t *bx_foreign_collect(bx_stats_t *stats, unsigned groups, bx_snapshot_t *s);
const bx_parts_t *bx_foreign_table_parts(const bx_foreign_t *f, const bx_metric_t *m);
int bx_foreign_emit(bx_foreign_t *f);
void bx_foreign_free(bx_foreign_t *f);

#endif /* BX_STATS_SOURCE_H */
