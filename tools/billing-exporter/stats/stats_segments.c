/*
 * stats_segments.c -- a stats segment's life in the exporter (the stages
 * in stats_state.h): read while its writer runs, each reading's changes
 * added to its target's sums; final, and not read again, once its writer
 * is gone; forgotten when its file is, what it counted kept.  The
 * targets' first refresh (bx_stats_start) and their end (bx_stats_free)
 * are here too, beside the segments they read and drop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats_state.h"
#include "stats_trust.h"

seg_t *bx_stats_seg_new(const bx_stats_t *stats, const char *path)
{
	seg_t *s = calloc(1, sizeof *s);
	if (!s || !(s->path = strdup(path))) {
		free(s);
		return NULL;
	}
	const char *slash = strrchr(s->path, '/');
	s->name = slash ? slash + 1 : s->path;
	s->early = !stats->started;
	for (const char *c = s->name; *c; c++)
		s->turn = (unsigned char)(s->turn * 31 + (unsigned char)*c);
	return s;
}

/* Whether a reading's description lays out maps of another shape with
 * rows: only foreign_families.c serves those, from the reading itself. */
static int foreign(const bs_segment_t *rd)
{
	for (size_t sm = 0; rd && rd->layout && sm < rd->layout->nmaps; sm++)
		if (rd->layout->maps[sm].build_map < 0 && rd->map_rows[sm] > 0)
			return 1;
	return 0;
}

/* Reading rd kept whole in t->kept when only it serves some of its rows:
 * 0, or -1 (nothing only it serves, or out of memory). */
static int keep_whole(stats_target_t *t, bs_segment_t *rd)
{
	bs_segment_t **k = foreign(rd) ? realloc(t->kept, (t->nkept + 1) * sizeof *k) : NULL;
	if (!k)
		return -1;
	t->kept = k;
	t->kept[t->nkept++] = rd;
	return 0;
}

/* s's reading let go: kept whole when keep and only it serves some of
 * its rows, else freed (its counts are in the sums). */
static void let_go(stats_target_t *t, seg_t *s, int keep)
{
	if (keep)
		bx_sums_natives_lost(t, s);
	bx_sums_places_free(&s->places);
	if (s->reading && !(keep && keep_whole(t, s->reading) == 0)) {
		bs_segment_free(s->reading);
		free(s->reading);
	}
	s->reading = NULL;
}

void bx_stats_seg_drop(stats_target_t *t, seg_t *s, int keep)
{
	let_go(t, s, keep);
	free(s->path);
	free(s);
}

/* A later file at s's path: the entry starts over, what the old file
 * counted stays in the sums.  A reading under way into s->reading (a new
 * generation, seen by accept_header) keeps its memory, afresh: its old rows kept
 * whole first when only they serve some families. */
static void renew(const bx_stats_t *stats, stats_target_t *t, seg_t *s)
{
	bs_segment_t *rd = s->reading, *whole = rd && foreign(rd) ? malloc(sizeof *whole) : NULL;
	bx_sums_natives_lost(t, s);
	if (whole)
		*whole = *rd;
	if (whole && keep_whole(t, whole) == 0) {
		memset(rd, 0, sizeof *rd);
	} else if (rd) {
		free(whole);
		bs_segment_forget(rd);
	}
	bx_sums_places_free(&s->places);
	seg_t was = *s;
	memset(s, 0, sizeof *s);
	s->path = was.path;
	s->name = was.name;
	s->turn = was.turn;
	s->owner = was.owner;
	s->reading = rd;
	s->early = !stats->started;
}

/* The one place a segment changes stage (the stages: stats_state.h), and
 * what entering each does to its reading and its target's sums. */
static void enter(const bx_stats_t *stats, stats_target_t *t, seg_t *s, int stage, const struct stat *file)
{
	switch (stage) {
	case SEG_NEW: /* a later file at its path (a refused one that changed was never read) */
		if (s->stage != SEG_REFUSED)
			renew(stats, t, s);
		break;
	case SEG_LIVE: break; /* each reading's changes go into the sums as it is taken */
	case SEG_FINAL:       /* its writer gone: what it counted is in the sums */
		let_go(t, s, 1);
		break;
	case SEG_REFUSED:
		bx_stats_key_of(file, &s->refused_key);
		break;
	case SEG_ELSEWHERE: /* a reading from before any probe was attached: never shown */
		bx_sums_take_out(t, s);
		let_go(t, s, 0);
		break;
	}
	s->stage = stage;
}

enum { TAKE,
       SKIP,
       ELSEWHERE };

typedef struct accept_ctx {
	bx_stats_t *stats;
	stats_target_t *t;
	seg_t *s;
	int verdict;
} accept_ctx_t;

/* Whether segment s may be read, as its header names its writer: a --pid
 * target's own process; not counted by another target; inside --cgroup.
 * A header of another generation than the reading's is a new file at the
 * path: the entry starts over first. */
static int accept_header(void *arg, const struct bs_header *h, char *err, size_t errlen)
{
	accept_ctx_t *c = arg;
	stats_target_t *t = c->t;
	seg_t *s = c->s;
	c->verdict = SKIP;
	if (t->pid > 0 && (h->pid != (uint32_t)t->proc.ns_pid || h->start_time != t->proc.start_time)) {
		snprintf(err, errlen, "its header names another process (pid %u) than %d", (unsigned)h->pid, t->pid);
		s->skipped = BX_SKIP_UNATTRIBUTED;
		bx_stats_say_skipped(s, err);
		return 1;
	}
	if (s->reading && s->reading->layout && s->reading->generation != h->generation)
		enter(c->stats, t, s, SEG_NEW, NULL);
	if (t->pid < 0 && !s->binary_known && bx_stats_counted_elsewhere(c->stats, t, s, h)) {
		c->verdict = s->skipped ? SKIP : ELSEWHERE;
		return 1;
	}
	if (t->cgroup && bx_stats_cgroup_allows(t, s, h, err, errlen) != 0) {
		bx_stats_say_skipped(s, err);
		return 1;
	}
	c->verdict = TAKE;
	return 0;
}

/* Whether the process that wrote s runs, as the kernel shows it. */
static int writer_runs(const stats_target_t *t, const seg_t *s)
{
	pr_proc_t now;
	return t->pid > 0 ? pr_proc_read(t->pid, &now) == 0 && now.start_time == t->proc.start_time
	                  : pr_proc_wrote((pid_t)s->pid, s->start_time, s->owner, &now) != 0;
}

/* A reading of s was taken: its identity kept, its trails' exemplars. */
static void taken(bx_stats_t *stats, seg_t *s, int fd, struct stat *st)
{
	const bs_segment_t *rd = s->reading;
	s->ino = st->st_ino;
	s->owner = st->st_uid;
	s->pid = rd->pid;
	s->state = rd->state;
	s->generation = rd->generation;
	s->start_time = rd->start_time;
	s->desc_hash = rd->layout->hash;
	s->nmaps = rd->layout->nmaps;
	s->said = 0;
	s->skipped = 0;
	s->quiet = rd->changes.nrows ? 0 : s->quiet + 1;
	/* Its trails from the same open file: a segment without a trail ring
	 * gives none, its metrics as they are. */
	bs_trails_t trails = { 0 };
	char no_trails[256];
	if (stats->exemplars && bs_trails_new_fd(fd, rd, BS_LANE_KEPT, s->trail_next) &&
	    bs_trails_read_fd(fd, BS_LANE_KEPT, s->trail_next, &trails, no_trails, sizeof no_trails) == 0 && trails.pid == rd->pid &&
	    trails.start_time == rd->start_time) {
		bx_trail_exemplars_take(stats->exemplars, &trails);
		if (trails.count)
			s->trail_next = trails.trails[trails.count - 1].seq / 2;
	}
	bs_trails_free(&trails);
}

int bx_stats_seg_read(bx_stats_t *stats, stats_target_t *t, seg_t *s, int dfd)
{
	char err[PATH_MAX + 256];
	struct stat st;
	int why = BX_SKIP_UNREADABLE, rc = -1;

	if (s->stage == SEG_FINAL || s->stage == SEG_ELSEWHERE)
		return 0;
	if (s->stage == SEG_REFUSED) { /* not opened again until it changes */
		if (fstatat(dfd, s->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			return errno == ENOENT;
		if (bx_stats_same_key(&s->refused_key, &st))
			return 0;
		enter(stats, t, s, s->reading ? SEG_LIVE : SEG_NEW, NULL);
	}
	/* A writer seen gone before this reading (looked at once it has
	 * exited, after the first reading that changed nothing, and every
	 * 64th after in a row, at a turn of its own so the looks spread over
	 * the scrapes): this reading is its last, and whole. */
	int last = s->stage == SEG_LIVE && s->quiet &&
	           (s->state == BS_EXITED || s->quiet == 1 || (s->quiet + s->turn) % 64 == 0) && !writer_runs(t, s);
	int fd = bx_stats_seg_open(t, s, dfd, &st, &why, err, sizeof err);
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0 && t->pid < 0 && fstatat(dfd, s->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		memset(&st, 0, sizeof st); /* a key no file has: looked at again */
	accept_ctx_t c = { stats, t, s, TAKE };
	bs_segment_t *first = &stats->first;
	if (fd >= 0 && t->only_uid >= 0 && st.st_uid != (uid_t)t->only_uid) {
		snprintf(err, sizeof err, "not owned by uid %ld (--uid)", t->only_uid);
		why = BX_SKIP_UID;
	} else if (fd >= 0) {
		bs_segment_t *into = s->reading ? s->reading : first;
		s->owner = st.st_uid;
		into->defer_natives = !stats->natives && !last; /* a last reading is whole */
		rc = bs_read_fd_if(fd, &st, into, accept_header, &c, err, sizeof err);
	}
	if (rc == 0 && !s->reading && !(s->reading = malloc(sizeof *s->reading))) {
		snprintf(err, sizeof err, "out of memory"); /* read afresh next time */
		rc = -1;
	} else if (rc == 0 && s->reading && first->layout) { /* taken: the first reading is the segment's own */
		*s->reading = *first;
		memset(first, 0, sizeof *first);
	}
	if (first->layout)
		bs_segment_forget(first);
	if (rc == 0) {
		taken(stats, s, fd, &st);
		enter(stats, t, s, SEG_LIVE, NULL);
		bx_sums_add(t, s);
		if (last)
			enter(stats, t, s, SEG_FINAL, NULL);
	}
	if (fd >= 0)
		close(fd);
	if (rc == 1 && c.verdict == ELSEWHERE) {
		enter(stats, t, s, SEG_ELSEWHERE, NULL);
	} else if (rc < 0) {
		s->skipped = (signed char)why;
		bx_stats_say_skipped(s, err);
		if (t->pid < 0 && st.st_ino && bx_stats_refusal_stands(why == BX_SKIP_UNREADABLE && fd >= 0, &st))
			enter(stats, t, s, SEG_REFUSED, &st);
	}
	return 0;
}

/* Every segment of a --stats-dir, its directory checked again first (a
 * directory that no longer passes is said once and not read, its
 * readings kept).  The sorted listing is walked beside the entries
 * (sorted by name): a name new here is a new entry, an entry whose name
 * is gone is dropped (what it counted stays), a final one costs nothing
 * while the listing shows its file, a refused one a look at its file. */
static void read_dir(bx_stats_t *stats, stats_target_t *t)
{
	char why[256], path[PATH_MAX];
	int dfd;
	uid_t user;
	size_t i = 0, j = 0, kept = 0;
	names_t names;
	long expected = t->awaited == -2 ? (long)t->user : t->awaited;
	if (pr_stats_dir_open(t->dir, expected, PR_OWNER_OR_ROOT, &dfd, &user, why, sizeof why) != 0) {
		if (!t->dir_said)
			bx_error("--stats-dir %s: %s: not read", t->dir, why);
		t->dir_said = 1;
		return;
	}
	if (t->awaited != -2) {
		char who[128];
		t->user = user;
		t->awaited = -2;
		bx_error("--stats-dir %s: appeared: the segments of %s", t->dir, pr_user_text(user, who, sizeof who));
	}
	t->dir_said = 0;
	seg_t **next = bx_stats_list_names(dfd, &names) == 0 ? malloc((t->nsegs + names.n + 1) * sizeof *next) : NULL;
	if (!next) {
		close(dfd);
		bx_stats_names_free(&names);
		return; /* out of memory: this refresh reads nothing new, every reading kept */
	}
	while (i < t->nsegs || j < names.n) {
		int c = i == t->nsegs ? 1 : j == names.n ? -1
		                                         : strcmp(t->segs[i]->name, names.e[j].name);
		seg_t *s;
		if (c < 0) { /* its file is gone */
			bx_stats_seg_drop(t, t->segs[i++], 1);
			continue;
		}
		if (c > 0) {
			if (snprintf(path, sizeof path, "%s/%s", t->dir, names.e[j++].name) >= (int)sizeof path ||
			    !(s = bx_stats_seg_new(stats, path)))
				continue;
		} else {
			s = t->segs[i++];
			if (s->stage == SEG_FINAL && s->ino != names.e[j].ino)
				enter(stats, t, s, SEG_NEW, NULL); /* a later process's file at its path */
			j++;
		}
		if (bx_stats_seg_read(stats, t, s, dfd)) {
			bx_stats_seg_drop(t, s, 1);
			continue;
		}
		next[kept++] = s;
	}
	free(t->segs);
	t->segs = next;
	t->nsegs = kept;
	bx_stats_names_free(&names);
	close(dfd);
}

void bx_stats_refresh(bx_stats_t *stats, int natives)
{
	if (!stats)
		return;
	stats->natives = natives;
	for (size_t i = 0; i < stats->count; i++) {
		stats_target_t *t = &stats->targets[i];
		if (t->pid < 0) {
			read_dir(stats, t);
			continue;
		}
		if (t->nsegs == 0) {
			if (!(t->segs = calloc(1, sizeof *t->segs)) || !(t->segs[0] = bx_stats_seg_new(stats, t->path))) {
				free(t->segs);
				t->segs = NULL;
				continue;
			}
			t->nsegs = 1;
		}
		if (bx_stats_seg_read(stats, t, t->segs[0], -1)) {
			bx_stats_seg_drop(t, t->segs[0], 1);
			free(t->segs);
			t->segs = NULL;
			t->nsegs = 0;
		}
	}
}

void bx_stats_start(bx_stats_t *stats)
{
	bx_stats_refresh(stats, 1); /* a writer gone before the first scrape leaves whole native cells */
	stats->started = 1;
}

void bx_stats_free(bx_stats_t *stats)
{
	if (!stats)
		return;
	for (size_t i = 0; i < stats->count; i++) {
		stats_target_t *t = &stats->targets[i];
		for (size_t k = 0; k < t->nsegs; k++)
			bx_stats_seg_drop(t, t->segs[k], 0);
		free(t->segs);
		for (size_t k = 0; k < t->nkept; k++) {
			bs_segment_free(t->kept[k]);
			free(t->kept[k]);
		}
		free(t->kept);
		bx_sums_free(&t->sums);
	}
	bs_segment_free(&stats->first);
	bx_trail_exemplars_free(stats->exemplars);
	free(stats->targets);
	free(stats->named);
	free(stats);
}
