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

#include "exporter.h"
#include "stats_trust.h" /* BX_FILE_*: the first skip reasons */

enum { BX_SOURCE_AUTO,
       BX_SOURCE_STATS,
       BX_SOURCE_USDT };

/* "auto" -> BX_SOURCE_AUTO ...; -1 for an unknown name. */
int bx_source_by_name(const char *name);

/* Take the targets the stats serve: every directory (refused unless its
 * owner and mode pass, or named twice), and each PID whose segment is
 * found (source auto or stats; with stats a PID without one is an error,
 * saying where it looked).  Every PID is remembered, whichever source
 * serves it, so no directory counts its process again; a PID named twice
 * is an error.  PIDs left for USDT stay in pids[0, *npids).  0, or -1 with
 * a one-line reason in err. */
int bx_stats_setup(bx_exporter_t *ex, int source, const char **pids, size_t *npids, const char **dirs,
                   size_t ndirs, char *err, size_t errlen);

/* The first reading, once every target is read and before any probe is
 * attached: a segment whose writer is gone by then was never counted
 * through USDT too. */
void bx_stats_start(bx_exporter_t *ex);

/* Rescan and read every stats target, each segment's changes added to its
 * target's sums (call with ex->lock held, once per snapshot, before the
 * rows). */
void bx_stats_refresh(bx_exporter_t *ex);

/* Append map mi's rows from the stats targets to the snapshot's rows
 * (snapshot.c's row_t array); 0, or -1 when out of memory. */
struct bx_row;
int bx_stats_rows(bx_exporter_t *ex, size_t mi, struct bx_row **items, size_t *count, size_t *cap);

/* Why a segment's latest reading was left out (its earlier readings, if
 * any, stay in the sums): it could not be read (or is not a regular file
 * nobody else may write); another user than the directory's (or --uid's)
 * owns it; --cgroup: its writer is outside the subtree; its writer cannot
 * be told (gone before it was first seen, not this host's PID, not the
 * file's user's; or, with a --binary, whether that counts it). */
enum { BX_SKIP_NONE,
       BX_SKIP_UNREADABLE = BX_FILE_UNREADABLE, /* bx_stats_file_open() says these two */
       BX_SKIP_UID = BX_FILE_OTHER_USER,
       BX_SKIP_CGROUP,
       BX_SKIP_UNATTRIBUTED,
       BX_SKIP_COUNT };
extern const char *const bx_skip_reasons[BX_SKIP_COUNT]; /* label values: "unreadable", ... */
/* Segments whose latest reading was left out for reason, now. */
size_t bx_stats_skipped(const bx_exporter_t *ex, int reason);

/* Every reading the stats targets keep (each live segment's last one, and
 * those kept whole because their descriptions lay out maps of another
 * shape), for the families only segments describe (foreign_families.c):
 * fn(ctx, path, reading, said) where said
 * is the segment's record of family lines said (one bit per family of
 * its description, BS_LAYOUT_FAMILIES).  Stops at fn's first non-zero. */
struct bs_segment;
typedef int (*bx_reading_fn)(void *ctx, const char *path, const struct bs_segment *seg, uint64_t *said);
int bx_stats_each_reading(bx_exporter_t *ex, bx_reading_fn fn, void *ctx);

size_t bx_stats_target_count(const bx_exporter_t *ex);
const char *bx_stats_target_label(const bx_exporter_t *ex, size_t i);
int bx_stats_target_up(const bx_exporter_t *ex, size_t i);
/* The probe sets among stats target i's segments as last read, each once:
 * its description's hash and how many probes feed its maps; how many
 * there are (at most cap are written). */
size_t bx_stats_target_probe_sets(const bx_exporter_t *ex, size_t i, uint64_t *hash, size_t *probes, size_t cap);
/* The process of stats target i, -1 for a directory. */
int bx_stats_target_pid(const bx_exporter_t *ex, size_t i);

void bx_stats_free(bx_exporter_t *ex);

#endif /* BX_STATS_SOURCE_H */
