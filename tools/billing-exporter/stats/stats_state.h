/*
 * stats_state.h -- what the stats source's rooms share (stats_source.h is
 * their face to the rest of the exporter):
 *
 *   stats_targets.c   finding and trusting: --stats-dir and --pid targets,
 *                     a directory's names, whose a file and its writer are
 *   stats_segments.c  a segment's life: read while its writer runs, final
 *                     once it is gone, forgotten when its file is
 *   stats_sums.c      keeping: each target's label sets with every
 *                     reading's changes added as they come, served as rows
 *
 * A segment's stages (seg_t.stage), each entered through enter() in
 * stats_segments.c, the one place that says what entering it does:
 *
 *   NEW        listed for the first time, or a later file at its path (a
 *              new inode, a new generation): the entry starts over, what
 *              the old file counted stays in the sums
 *   LIVE       a reading taken: its changes added to the sums
 *   FINAL      LIVE, its writer gone: that reading was its last; it is
 *              let go, and the file not read again
 *   REFUSED    NEW or LIVE, refused for what the file is: not opened
 *              again until fstat shows it changed, then NEW or LIVE
 *   ELSEWHERE  NEW or LIVE, its writer counted by a --pid or a --binary:
 *              a reading made before any probe was attached is taken out
 *              of the sums, never shown; the file not read again
 *   (any)      its name gone from the directory: the entry goes
 *
 * What a segment counted stays in its target's sums whatever follows:
 * service counters never go back while the exporter runs.  A FINAL
 * segment costs its entry and its name in the listing (the inode the
 * listing shows tells a new file at its path).
 */
#ifndef BX_STATS_STATE_H
#define BX_STATS_STATE_H

#include <stdint.h>
#include <stddef.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "stats_trail.h"
#include "samples.h"
#include "cgroup_filter.h"
#include "proc_identity.h"
#include "report.h"
#include "stats_read.h"
#include "stats_source.h"

/* --- the latest slow requests (trail_exemplars.c) ------------------------ */

typedef struct bx_trail_exemplars bx_trail_exemplars_t;

/* NULL when out of memory or when no family observes duration_ns. */
bx_trail_exemplars_t *bx_trail_exemplars_new(void);
void bx_trail_exemplars_free(bx_trail_exemplars_t *te);

/* Take the kept trails of one trusted reading of a segment: the latest
 * per (handler, bucket) wins; none that ends past this clock. */
void bx_trail_exemplars_take(bx_trail_exemplars_t *te, const bs_trails_t *trails);

/* The source for format.c; valid while te lives. */
const bx_exemplar_source_t *bx_trail_exemplars_source(bx_trail_exemplars_t *te);

/* --- label sets summed (row_sum.c) --------------------------------------- */

typedef struct bx_row_sum {
	bs_read_row_t *rows; /* one per label set, in the order first placed */
	size_t count, cap;
	uint64_t *cells; /* each row's cells summed, BX_MAX_CELLS of them at cells[i * BX_MAX_CELLS] */
	/* Each row's native buckets (stats_read.h), native_cells of them at
	 * native[i * native_cells]; set native_cells before the first use. */
	uint64_t *native;
	size_t native_cells;
	/* per row: its native cells are not its counts' and never will be (a
	 * segment counted in it without native buckets, or was let go while
	 * its native cells were behind): served without them, its classic
	 * buckets still exact */
	unsigned char *native_lost;
	uint32_t *refs; /* per row: the segments' rows placed there (0: none counts in it now) */
	/* per row: its labels as the exporter admitted them (labels.c: an
	 * admitted value or "other" stays so), NULL until first served */
	const char *(*admitted)[BX_MAX_FIELDS];
	uint32_t *index; /* open addressing: a row's position + 1, 0 empty; a power of two entries */
	size_t nindex;
} bx_row_sum_t;

/* Room for n more label sets, so the next n places cannot fail: 0, or -1
 * when out of memory (nothing changed). */
int bx_row_sum_reserve(bx_row_sum_t *t, size_t n);
/* The place of row's label set (a new row, its cells, native cells and
 * refs zero, on first sight).  Call only within reserved room. */
size_t bx_row_sum_place(bx_row_sum_t *t, const bs_read_row_t *row);
/* Row i's cells. */
static inline uint64_t *bx_row_cells(const bx_row_sum_t *t, size_t i)
{
	return t->cells + i * BX_MAX_CELLS;
}
/* Row i's native cells (NULL when the rows have none). */
static inline uint64_t *bx_row_native(const bx_row_sum_t *t, size_t i)
{
	return t->native_cells ? t->native + i * t->native_cells : NULL;
}
void bx_row_sum_free(bx_row_sum_t *t);

/* A file's identity and state as fstat shows them: a refusal that
 * depends only on these stands until one of them changes. */
typedef struct file_key {
	dev_t dev;
	ino_t ino;
	uid_t uid;
	mode_t mode;
	off_t size;
	blkcnt_t blocks;
	struct timespec mtime, ctime;
} file_key_t;

enum { SEG_NEW,
       SEG_LIVE,
       SEG_FINAL,
       SEG_REFUSED,
       SEG_ELSEWHERE };

/* Where each row of a segment's reading is among its target's label sets
 * (bx_sums), per map of this build's shape: a writer only appends rows
 * within a generation, so a row's place is looked up once. */
typedef struct seg_places {
	uint32_t *at[BX_MAP_COUNT];
	size_t n[BX_MAP_COUNT];
} seg_places_t;

/* One segment file followed. */
typedef struct seg {
	char *path;       /* "DIR/NAME" (a --pid target's own path) */
	const char *name; /* within path: NAME */
	int stage;        /* SEG_* */
	ino_t ino;        /* the file last read (or refused): the listing's d_ino says when another is there */
	/* LIVE: its reading (FINAL too when its description lays out maps of
	 * another shape: foreign_families.c serves them from it), and its
	 * rows' places in the sums */
	bs_segment_t *reading;
	seg_places_t *places; /* NULL until its rows are placed */
	/* who wrote it, as its last reading said (FINAL keeps this alone) */
	uint32_t pid, state;
	uint64_t generation, start_time, desc_hash;
	size_t nmaps;
	uid_t owner;                                     /* of the file at its last reading */
	unsigned quiet;                                  /* readings in a row that changed nothing: when its writer is looked at */
	unsigned char turn;                              /* ... at which of each 64 of them (from its name) */
	signed char skipped;                             /* BX_SKIP_*: why its last reading was not taken, 0 when it was */
	char said;                                       /* its problem was reported (once per segment) */
	char inside;                                     /* --cgroup: its writer, still running, was in the subtree at the last look */
	char binary_known;                               /* whether a --binary counts its writer is known (it does not) */
	char early;                                      /* first seen before any probe was attached */
	uint64_t trail_next;                             /* the first of its trails not taken as an exemplar yet */
	uint64_t families_said[BS_LAYOUT_FAMILIES / 64]; /* families refused from its reading, said (one bit each) */
	file_key_t refused_key;                          /* REFUSED: the file as it was refused */
} seg_t;

/* A target's label sets of each map of this build: every reading's
 * counts summed (stats_sums.c). */
typedef struct bx_sums {
	bx_row_sum_t map[BX_MAP_COUNT];
} bx_sums_t;

typedef struct stats_target {
	char label[PATH_MAX + 8]; /* "stats:DIR" or "pid:N" */
	char dir[PATH_MAX];       /* a directory of segments, or "" */
	uid_t user;               /* whose segments: the directory's user, or the --pid process's */
	long awaited;             /* a directory not there yet: -1, or whose it must be (-2 unsaid) */
	int dir_said;             /* the directory's problem was reported, until it reads again */
	char path[PATH_MAX];      /* a --pid target's segment */
	int pid;                  /* a --pid target's process here, -1 for a directory */
	pr_proc_t proc;           /* ... who that process is, as /proc said at the start */
	dev_t dev;                /* ... and the segment file found for it */
	ino_t ino;
	long only_uid;             /* --uid, -1 none */
	const bx_cgroup_t *cgroup; /* --cgroup, NULL none */
	seg_t **segs;              /* a directory's: sorted by name */
	size_t nsegs;
	bx_sums_t sums;
	/* readings of segments that are gone whose descriptions lay out maps
	 * of another shape: kept whole for foreign_families.c */
	bs_segment_t **kept;
	size_t nkept;
} stats_target_t;

struct bx_stats {
	bx_stats_scope_t scope;
	stats_target_t *targets;
	size_t count;
	pr_proc_t *named; /* the process of every --pid, whichever source serves it */
	size_t nnamed;
	int started;                     /* set up: probes may be attached from now on */
	int natives;                     /* this refresh brings native cells up to date (bx_stats_refresh) */
	bx_trail_exemplars_t *exemplars; /* the latest slow request per bucket, from the segments taken */
	bs_segment_t first;              /* a segment's first reading, until it is taken: a name that is no
	                                  * segment costs no memory of its own */
};

/* --- stats_targets.c -------------------------------------------------------- */

/* A --stats-dir's "*.stats" names, sorted, each with the inode the
 * listing gives; 0, or -1 when out of memory. */
typedef struct listed {
	const char *name;
	ino_t ino;
} listed_t;
typedef struct names {
	char *text;
	listed_t *e;
	size_t n;
} names_t;
int bx_stats_list_names(int dfd, names_t *out);
void bx_stats_names_free(names_t *n);

/* Open target t's segment s (dfd: its directory for a --stats-dir): the
 * file trusted for its owner and mode, a --pid's the very file found at
 * the start.  fd, or -1 with *why (BX_SKIP_*) and err (errno ENOENT: the
 * file is gone). */
int bx_stats_seg_open(const stats_target_t *t, const seg_t *s, int dfd, struct stat *st, int *why, char *err,
                      size_t errlen);

/* Whether a refusal of what the file is stands until it changes (see
 * stats_targets.c); a file's key; whether st is still that file as it was. */
int bx_stats_refusal_stands(int content, const struct stat *st);
void bx_stats_key_of(const struct stat *st, file_key_t *k);
int bx_stats_same_key(const file_key_t *a, const struct stat *st);

/* A directory's segment whose writer (as header h names it) another
 * target counts (said once): 1 when it must not be summed here (or is
 * unattributed: s->skipped set); 0 when it may. */
int bx_stats_counted_elsewhere(const bx_stats_t *stats, const stats_target_t *t, seg_t *s, const struct bs_header *h);
/* --cgroup: may segment s, its writer as header h names it, be read?  0,
 * else a reason in err (s->skipped set). */
int bx_stats_cgroup_allows(const stats_target_t *t, seg_t *s, const struct bs_header *h, char *err, size_t errlen);

/* One line per segment and problem, until the segment reads cleanly again. */
void bx_stats_say_skipped(seg_t *s, const char *err);

/* --- stats_segments.c ------------------------------------------------------- */

seg_t *bx_stats_seg_new(const bx_stats_t *stats, const char *path);
/* The entry freed; what it counted stays in t's sums (keep: a reading
 * that lays out maps of another shape moves to t->kept). */
void bx_stats_seg_drop(stats_target_t *t, seg_t *s, int keep);
/* Read segment s of target t (dfd: a --stats-dir's), its changes added
 * to t's sums.  1 when its file is gone (the caller drops the entry),
 * else 0. */
int bx_stats_seg_read(bx_stats_t *stats, stats_target_t *t, seg_t *s, int dfd);

/* --- stats_sums.c ----------------------------------------------------------- */

/* Every reading the stats targets keep (each live segment's last one, and
 * those kept whole because their descriptions lay out maps of another
 * shape), for the families only segments describe (foreign_families.c):
 * fn(ctx, path, reading, said) where said is the segment's record of
 * family lines said (one bit per family of its description,
 * BS_LAYOUT_FAMILIES).  Stops at fn's first non-zero. */
typedef int (*bx_reading_fn)(void *ctx, const char *path, const bs_segment_t *seg, uint64_t *said);
int bx_stats_each_reading(bx_stats_t *stats, bx_reading_fn fn, void *ctx);

/* The changes of s's last reading added to t's sums (its new rows placed
 * first).  0; -1 when out of memory: then what the reading had added
 * before is taken out again and the reading forgotten, so the next one
 * (afresh) adds it all, never twice. */
int bx_sums_add(stats_target_t *t, seg_t *s);
/* Everything s's reading counted taken out of t's sums (a reading from
 * before any probe was attached, never to be shown), its places dropped. */
void bx_sums_take_out(stats_target_t *t, seg_t *s);
/* s let go with what it counted kept in t's sums: when its reading's
 * native cells are behind its counts, its label sets' are lost. */
void bx_sums_natives_lost(stats_target_t *t, const seg_t *s);
void bx_sums_places_free(seg_places_t **p);
void bx_sums_free(bx_sums_t *sums);

#endif /* BX_STATS_STATE_H */
