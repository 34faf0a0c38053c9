/*
 * stats_segments.c -- a stats segment's life in the exporter (the stages
 * in stats_state.h): read while its writer runs, each reading's changes
 * added to its target's sums; final, and not read again, once its writer
 * is gone; forgotten when its file is, what it counted kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats_state.h"
#include "stats_trust.h"

seg_t *bx_stats_seg_new(const bx_exporter_t *ex, const char *path)
{
	seg_t *s = calloc(1, sizeof *s);
	if (!s || !(s->path = strdup(path))) {
		free(s);
		return NULL;
	}
	const char *slash = strrchr(s->path, '/');
	s->name = slash ? slash + 1 : s->path;
	s->early = !ex->stats->started;
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

/* s's reading let go: kept whole in t->kept when keep and only it can
 * serve some of its rows, else freed (its counts are in the sums). */
static void let_go(stats_target_t *t, seg_t *s, int keep)
{
	bx_sums_places_free(&s->places);
	if (!s->reading)
		return;
	if (keep && foreign(s->reading)) {
		bs_segment_t **k = realloc(t->kept, (t->nkept + 1) * sizeof *k);
		if (k) {
			t->kept = k;
			t->kept[t->nkept++] = s->reading;
			s->reading = NULL;
			return;
		}
	}
	bs_segment_free(s->reading);
	free(s->reading);
	s->reading = NULL;
}

void bx_stats_seg_drop(stats_target_t *t, seg_t *s, int keep)
{
	let_go(t, s, keep);
	free(s->path);
	free(s);
}

/* A new file at s's path (a later process given the PID): what the old
 * one counted stays, the entry starts over. */
static void renew(const bx_exporter_t *ex, stats_target_t *t, seg_t *s)
{
	let_go(t, s, 1);
	char *path = s->path;
	const char *name = s->name;
	unsigned char turn = s->turn;
	memset(s, 0, sizeof *s);
	s->path = path;
	s->name = name;
	s->turn = turn;
	s->early = !ex->stats->started;
}

enum { TAKE,
       SKIP,
       ELSEWHERE };

typedef struct accept_ctx {
	const bx_exporter_t *ex;
	stats_target_t *t;
	seg_t *s;
	int verdict;
} accept_ctx_t;

/* Whether segment s may be read, as its header names its writer: a --pid
 * target's own process; not counted by another target; inside --cgroup.
 * A header of another generation than the reading's is a new file at the
 * path: the entry starts over first. */
static int accept(void *arg, const struct bs_header *h, char *err, size_t errlen)
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
	if (s->reading && s->reading->layout && s->reading->generation != h->generation) {
		uid_t owner = s->owner;
		bs_segment_t *rd = s->reading, *whole = foreign(rd) ? malloc(sizeof *whole) : NULL;
		bs_segment_t **k = whole ? realloc(t->kept, (t->nkept + 1) * sizeof *k) : NULL;
		if (k) { /* rows only it serves: kept whole, this reading afresh in the same place */
			*whole = *rd;
			memset(rd, 0, sizeof *rd);
			t->kept = k;
			t->kept[t->nkept++] = whole;
		} else {
			free(whole);
			bs_segment_forget(rd); /* its memory reused: the reading is afresh */
		}
		s->reading = NULL;
		renew(c->ex, t, s);
		s->reading = rd;
		s->owner = owner;
	}
	if (t->pid < 0 && !s->binary_known && bx_stats_counted_elsewhere(c->ex, t, s, h)) {
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
	bx_proc_t now;
	return t->pid > 0 ? bx_proc_read(t->pid, &now) == 0 && now.start_time == t->proc.start_time
	                  : bx_proc_wrote((pid_t)s->pid, s->start_time, s->owner, &now) != 0;
}

/* A reading of s was taken: its identity kept, its trails' exemplars. */
static void taken(const bx_exporter_t *ex, seg_t *s, int fd, struct stat *st)
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
	if (ex->stats->exemplars && bs_trails_new_fd(fd, rd, BS_LANE_KEPT, s->trail_next) &&
	    bs_trails_read_fd(fd, BS_LANE_KEPT, s->trail_next, &trails, no_trails, sizeof no_trails) == 0 && trails.pid == rd->pid &&
	    trails.start_time == rd->start_time) {
		bx_trail_exemplars_take(ex->stats->exemplars, &trails);
		if (trails.count)
			s->trail_next = trails.trails[trails.count - 1].seq / 2;
	}
	bs_trails_free(&trails);
}

int bx_stats_seg_read(const bx_exporter_t *ex, stats_target_t *t, seg_t *s, int dfd)
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
		s->stage = s->reading ? SEG_LIVE : SEG_NEW;
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
	accept_ctx_t c = { ex, t, s, TAKE };
	bs_segment_t *first = &ex->stats->first;
	if (fd >= 0 && t->only_uid >= 0 && st.st_uid != (uid_t)t->only_uid) {
		snprintf(err, sizeof err, "not owned by uid %ld (--uid)", t->only_uid);
		why = BX_SKIP_UID;
	} else if (fd >= 0) {
		s->owner = st.st_uid;
		rc = bs_read_fd_if(fd, &st, s->reading ? s->reading : first, accept, &c, err, sizeof err);
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
		taken(ex, s, fd, &st);
		s->stage = SEG_LIVE;
		bx_sums_add(t, s);
		if (last) {
			let_go(t, s, 1); /* what it counted is in the sums; a foreign reading stays whole */
			s->stage = SEG_FINAL;
		}
	}
	if (fd >= 0)
		close(fd);
	if (rc == 1 && c.verdict == ELSEWHERE) {
		bx_sums_take_out(t, s); /* a reading from before any probe was attached: never shown */
		let_go(t, s, 0);
		s->stage = SEG_ELSEWHERE;
	} else if (rc < 0) {
		s->skipped = (signed char)why;
		bx_stats_say_skipped(s, err);
		if (t->pid < 0 && st.st_ino && bx_stats_refusal_stands(why == BX_SKIP_UNREADABLE && fd >= 0, &st)) {
			s->stage = SEG_REFUSED;
			bx_stats_key_of(&st, &s->refused_key);
		}
	}
	return 0;
}

/* Every segment of a --stats-dir, its directory checked again first (a
 * directory that no longer passes is said once and not read, its
 * readings kept).  The sorted listing is walked beside the entries
 * (sorted by name): a name new here is a new entry, an entry whose name
 * is gone is dropped (what it counted stays), a final one costs nothing
 * while the listing shows its file, a refused one a look at its file. */
static void read_dir(const bx_exporter_t *ex, stats_target_t *t)
{
	char why[256], path[PATH_MAX];
	int dfd;
	uid_t user;
	size_t i = 0, j = 0, kept = 0;
	names_t names;
	if (bx_stats_dir_open(t->dir, (long)t->user, BX_OWNER_OR_ROOT, &dfd, &user, why, sizeof why) != 0) {
		if (!t->dir_said)
			bx_error("--stats-dir %s: %s: not read", t->dir, why);
		t->dir_said = 1;
		return;
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
			    !(s = bx_stats_seg_new(ex, path)))
				continue;
		} else {
			s = t->segs[i++];
			if (s->stage == SEG_FINAL && s->ino != names.e[j].ino)
				renew(ex, t, s); /* a later process's file at its path */
			j++;
		}
		if (bx_stats_seg_read(ex, t, s, dfd)) {
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

void bx_stats_refresh(bx_exporter_t *ex)
{
	if (!ex->stats)
		return;
	for (size_t i = 0; i < ex->stats->count; i++) {
		stats_target_t *t = &ex->stats->targets[i];
		if (t->pid < 0) {
			read_dir(ex, t);
			continue;
		}
		if (t->nsegs == 0) {
			if (!(t->segs = calloc(1, sizeof *t->segs)) || !(t->segs[0] = bx_stats_seg_new(ex, t->path))) {
				free(t->segs);
				t->segs = NULL;
				continue;
			}
			t->nsegs = 1;
		}
		if (bx_stats_seg_read(ex, t, t->segs[0], -1)) {
			bx_stats_seg_drop(t, t->segs[0], 1);
			free(t->segs);
			t->segs = NULL;
			t->nsegs = 0;
		}
	}
}
