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
 * A segment's stages (seg_t.stage):
 *
 *   NEW ──read──> LIVE ──its writer gone──> FINAL
 *    │  │          │ └──a new generation at its path──> LIVE (afresh)
 *    │  │          └──counted by a --pid or a --binary──> ELSEWHERE
 *    │  └──refused for what the file is──> REFUSED ──the file changes──> NEW
 *    └──(any stage) its name gone from the directory: the entry goes
 *
 * What a segment counted stays in its target's sums whatever follows
 * (FINAL, a new generation, the file gone): service counters never go
 * back while the exporter runs.  Only ELSEWHERE takes a reading's counts
 * out (one made before any probe attached, never shown).  A FINAL
 * segment is not read again: it costs its entry, and its name in the
 * listing (the inode the listing shows tells a new file at its path).
 */
#ifndef BX_STATS_STATE_H
#define BX_STATS_STATE_H

#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "cgroup_filter.h"
#include "exporter.h"
#include "proc_identity.h"
#include "row_sum.h"
#include "stats_read.h"
#include "stats_source.h"
#include "trail_exemplars.h"

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
	int dir_said;             /* the directory's problem was reported, until it reads again */
	char path[PATH_MAX];      /* a --pid target's segment */
	int pid;                  /* a --pid target's process here, -1 for a directory */
	bx_proc_t proc;           /* ... who that process is, as /proc said at the start */
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
	stats_target_t *targets;
	size_t count;
	bx_proc_t *named; /* the process of every --pid, whichever source serves it */
	size_t nnamed;
	int started;                     /* set up: probes may be attached from now on */
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
int bx_stats_counted_elsewhere(const bx_exporter_t *ex, const stats_target_t *t, seg_t *s, const struct bs_header *h);
/* --cgroup: may segment s, its writer as header h names it, be read?  0,
 * else a reason in err (s->skipped set). */
int bx_stats_cgroup_allows(const stats_target_t *t, seg_t *s, const struct bs_header *h, char *err, size_t errlen);

/* One line per segment and problem, until the segment reads cleanly again. */
void bx_stats_say_skipped(seg_t *s, const char *err);

/* --- stats_segments.c ------------------------------------------------------- */

seg_t *bx_stats_seg_new(const bx_exporter_t *ex, const char *path);
/* The entry freed; what it counted stays in t's sums (keep: a reading
 * that lays out maps of another shape moves to t->kept). */
void bx_stats_seg_drop(stats_target_t *t, seg_t *s, int keep);
/* Read segment s of target t (dfd: a --stats-dir's), its changes added
 * to t's sums.  1 when its file is gone (the caller drops the entry),
 * else 0. */
int bx_stats_seg_read(const bx_exporter_t *ex, stats_target_t *t, seg_t *s, int dfd);

/* --- stats_sums.c ----------------------------------------------------------- */

/* The changes of s's last reading added to t's sums (its new rows placed
 * first).  0; -1 when out of memory: then what the reading had added
 * before is taken out again and the reading forgotten, so the next one
 * (afresh) adds it all, never twice. */
int bx_sums_add(stats_target_t *t, seg_t *s);
/* Everything s's reading counted taken out of t's sums (a reading from
 * before any probe was attached, never to be shown), its places dropped. */
void bx_sums_take_out(stats_target_t *t, seg_t *s);
void bx_sums_places_free(seg_places_t **p);
void bx_sums_free(bx_sums_t *sums);

#endif /* BX_STATS_STATE_H */
