/*
 * stats_source.c -- stats targets: find segments, read them
 * (lib/stats_read.c), keep each one's last good reading, and hand the
 * summed rows to the snapshot like the BPF maps' rows.  See stats_source.h.
 */
#include "stats_source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cgroup_filter.h"
#include "probe_reader.h"
#include "snapshot.h"
#include "stats_read.h"

/* One segment file followed: its last good reading stays in the sums. */
typedef struct seg {
	char path[PATH_MAX];
	uint64_t generation;
	bs_segment_t *last; /* NULL until read once */
	int said;           /* its problem was reported (once per segment) */
	int departed;       /* its reading could not be merged (out of memory): kept whole */
	int inside;         /* --cgroup: its writer, still running, was in the subtree at the last look */
	int skipped;        /* BX_SKIP_*: why its last reading was not taken, 0 when it was */
} seg_t;

/* The final readings of segments that are gone (file removed, or its path
 * taken by a later process), summed per label set: what they counted stays
 * in the service's totals, in memory that grows with label sets, not with
 * the number of processes that came and went. */
typedef struct gone_rows {
	bs_read_row_t *rows;
	size_t count, cap;
} gone_rows_t;

typedef struct stats_target {
	char label[PATH_MAX + 8]; /* "stats:DIR" or "pid:N" */
	char dir[PATH_MAX];       /* a directory of segments, or "" */
	char path[PATH_MAX];      /* a --pid target's segment */
	int pid;
	long only_uid;             /* --uid, -1 none */
	const bx_cgroup_t *cgroup; /* --cgroup, NULL none */
	seg_t *segs;
	size_t nsegs;
	gone_rows_t gone[BX_MAP_COUNT];
} stats_target_t;

struct bx_stats {
	stats_target_t *targets;
	size_t count;
};

int bx_source_by_name(const char *name)
{
	return strcmp(name, "auto") == 0    ? BX_SOURCE_AUTO
	       : strcmp(name, "stats") == 0 ? BX_SOURCE_STATS
	       : strcmp(name, "usdt") == 0  ? BX_SOURCE_USDT
	                                    : -1;
}

static int parse_pid(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	return *end || end == s || v <= 0 || v > 0x7fffffffL ? -1 : (int)v;
}

/* 1 when the segment at path was written by process pid itself: a file
 * found by name alone may be a gone process's whose PID was reused. */
static int written_by(const char *path, int pid)
{
	bs_segment_t *seg = malloc(sizeof *seg);
	char err[256];
	int ok = seg && bs_read_path(path, seg, err, sizeof err) == 0 && seg->pid == (uint32_t)pid &&
	         seg->start_time && seg->start_time == bp_process_start_time((pid_t)pid);
	free(seg);
	return ok;
}

/* The segment of process pid: the "N.stats" file it maps (/proc/PID/maps,
 * opened through /proc/PID/root so a container's path resolves), else
 * PID.stats in a --stats-dir or a default directory (a reader without
 * access to another user's /proc/PID/maps still finds it there). */
static int find_segment(int pid, const char **dirs, size_t ndirs, char *out, size_t outlen)
{
	char maps[64], line[PATH_MAX + 256];
	snprintf(maps, sizeof maps, "/proc/%d/maps", pid);
	FILE *f = fopen(maps, "re");
	while (f && fgets(line, sizeof line, f)) {
		char *path = strchr(line, '/');
		size_t n = path ? strcspn(path, "\n") : 0;
		if (!path || n < 7 || strncmp(path + n - 6, ".stats", 6) != 0 || strstr(path, " (deleted)"))
			continue;
		path[n] = '\0';
		snprintf(out, outlen, "/proc/%d/root%s", pid, path);
		FILE *probe = fopen(out, "re");
		if (!probe)
			snprintf(out, outlen, "%s", path);
		else
			fclose(probe);
		fclose(f);
		return 0;
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < ndirs; i++) {
		snprintf(out, outlen, "%s/%d.stats", dirs[i], pid);
		if (written_by(out, pid))
			return 0;
	}
	glob_t g;
	char pattern[64];
	int found = 0;
	snprintf(pattern, sizeof pattern, "/dev/shm/billing-stats-*/%d.stats", pid);
	if (glob(pattern, 0, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc && !found; i++)
			if ((found = written_by(g.gl_pathv[i], pid)))
				snprintf(out, outlen, "%s", g.gl_pathv[i]);
	globfree(&g);
	return found ? 0 : -1;
}

static stats_target_t *add_target(bx_exporter_t *ex)
{
	if (!ex->stats && !(ex->stats = calloc(1, sizeof *ex->stats)))
		return NULL;
	stats_target_t *t = realloc(ex->stats->targets, (ex->stats->count + 1) * sizeof *t);
	if (!t)
		return NULL;
	ex->stats->targets = t;
	t = &t[ex->stats->count++];
	memset(t, 0, sizeof *t);
	t->only_uid = ex->only_uid;
	t->cgroup = ex->cgroup;
	return t;
}

int bx_stats_setup(bx_exporter_t *ex, int source, const char **pids, size_t *npids, const char **dirs,
                   size_t ndirs, char *err, size_t errlen)
{
	size_t kept = 0;

	for (size_t i = 0; i < ndirs; i++) {
		DIR *d = opendir(dirs[i]);
		if (!d) {
			snprintf(err, errlen, "--stats-dir %s: %s", dirs[i], strerror(errno));
			return -1;
		}
		closedir(d);
		stats_target_t *t = add_target(ex);
		if (!t) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		snprintf(t->dir, sizeof t->dir, "%s", dirs[i]);
		snprintf(t->label, sizeof t->label, "stats:%s", dirs[i]);
		t->pid = -1;
	}
	for (size_t i = 0; i < *npids; i++) {
		char path[PATH_MAX];
		int pid = parse_pid(pids[i]);
		if (source == BX_SOURCE_USDT || pid < 0 || find_segment(pid, dirs, ndirs, path, sizeof path) != 0) {
			if (source == BX_SOURCE_STATS) {
				snprintf(err, errlen, "--pid %s: no stats segment found (is it a -Dstats=enabled build, "
				                      "with BILLING_STATS not off?)",
				         pids[i]);
				return -1;
			}
			pids[kept++] = pids[i]; /* through USDT */
			continue;
		}
		stats_target_t *t = add_target(ex);
		if (!t) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		snprintf(t->path, sizeof t->path, "%s", path);
		snprintf(t->label, sizeof t->label, "pid:%d", pid);
		t->pid = pid;
	}
	*npids = kept;
	if (ex->stats)
		bx_stats_refresh(ex);
	return 0;
}

/* The entry of path (a new one on first sight); departed entries are
 * never found again. */
static seg_t *seg_of(stats_target_t *t, const char *path)
{
	for (size_t i = 0; i < t->nsegs; i++)
		if (!t->segs[i].departed && strcmp(t->segs[i].path, path) == 0)
			return &t->segs[i];
	seg_t *s = realloc(t->segs, (t->nsegs + 1) * sizeof *s);
	if (!s)
		return NULL;
	t->segs = s;
	s = &s[t->nsegs++];
	memset(s, 0, sizeof *s);
	snprintf(s->path, sizeof s->path, "%s", path);
	return s;
}

static int same_labels(const bs_read_row_t *a, const bs_read_row_t *b)
{
	for (int f = 0; f < BX_MAX_FIELDS; f++)
		if (a->state[f] != b->state[f] || strcmp(a->text[f], b->text[f]) != 0)
			return 0;
	return 1;
}

/* Add a gone segment's last reading to the target's gone rows; 0, or -1
 * (out of memory: the caller keeps the reading whole instead). */
static int merge_gone(stats_target_t *t, const bs_segment_t *old)
{
	for (int m = 0; m < BX_MAP_COUNT; m++) {
		gone_rows_t *g = &t->gone[m];
		for (size_t r = 0; r < old->nrows[m]; r++) {
			const bs_read_row_t *src = bs_row(old, m, r);
			size_t i = 0;
			while (i < g->count && !same_labels(&g->rows[i], src))
				i++;
			if (i == g->count) {
				if (g->count == g->cap) {
					size_t cap = g->cap ? g->cap * 2 : 16;
					bs_read_row_t *n = realloc(g->rows, cap * sizeof *n);
					if (!n)
						return -1;
					g->rows = n;
					g->cap = cap;
				}
				g->rows[g->count] = *src;
				memset(g->rows[g->count].cells, 0, sizeof src->cells);
				g->count++;
			}
			for (size_t c = 0; c < BX_MAX_CELLS; c++)
				g->rows[i].cells[c] += src->cells[c];
		}
	}
	return 0;
}

/* The segment at entry idx has gone: its last reading joins the gone rows
 * and the entry goes (entries are found by path, never kept by index). */
static void retire(stats_target_t *t, size_t idx)
{
	seg_t *s = &t->segs[idx];
	if (s->last && merge_gone(t, s->last) != 0) {
		s->departed = 1; /* kept whole, found by no path again */
		return;
	}
	free(s->last);
	t->segs[idx] = t->segs[--t->nsegs];
}

/* --cgroup: may the reading in buf, of the segment at entry s, be taken?
 * Its writer (the PID a --pid target was given, else the segment's own,
 * checked against the segment's start time) is looked up in /proc at each
 * reading while it runs.  A writer seen in the subtree at its last look
 * keeps its segment counted after it exits (its final figures, nothing
 * lost); one seen outside, or never seen at all (gone before the first
 * look, or its PID is not the writer's here: another PID namespace), is
 * skipped.  0 to take it, else a one-line reason in err. */
static int cgroup_allows(const stats_target_t *t, seg_t *s, const bs_segment_t *buf, char *err, size_t errlen)
{
	pid_t pid = t->pid > 0 ? (pid_t)t->pid : (pid_t)buf->pid;
	int where = bx_cgroup_holds(t->cgroup, pid, buf->start_time);
	if (where >= 0)
		s->inside = where;
	if (s->inside)
		return 0;
	s->skipped = where < 0 ? BX_SKIP_UNATTRIBUTED : BX_SKIP_CGROUP;
	if (where < 0)
		snprintf(err, errlen, "its writer (pid %u) is gone or not this host's process: its cgroup is unknown "
		                      "(--cgroup)",
		         (unsigned)pid);
	else
		snprintf(err, errlen, "its writer (pid %u) is outside %s (--cgroup)", (unsigned)pid,
		         t->cgroup->given);
	return -1;
}

/* One line per segment and problem, until the segment reads cleanly again. */
static void say_skipped(seg_t *s, const char *err)
{
	if (!s->said)
		bx_error("%s: %s: skipped", s->path, err);
	s->said = 1;
}

/* Read the segment at entry idx.  A file that is gone, or a new file at a
 * known path (its PID reused by a later process), retires the old reading
 * into the gone rows; a segment that cannot be read, or is not the
 * service's (--uid, --cgroup), is one line, once, and keeps whatever it
 * had counted before. */
static void read_seg(stats_target_t *t, size_t idx, bs_segment_t *buf)
{
	char err[256];
	seg_t *s = &t->segs[idx];
	/* --uid: a segment another user wrote is not this service's, however
	 * it got into the directory; the owner checked on the file read */
	int fd = open(s->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat owner;
	int rc = -1, skip = 0;
	if (fd < 0)
		snprintf(err, sizeof err, "%s", strerror(errno));
	else if (t->only_uid >= 0 && (fstat(fd, &owner) != 0 || owner.st_uid != (uid_t)t->only_uid)) {
		snprintf(err, sizeof err, "not owned by uid %ld (--uid)", t->only_uid);
		skip = BX_SKIP_UID;
	} else
		rc = bs_read_fd(fd, buf, err, sizeof err);
	if (fd >= 0)
		close(fd);
	if (rc != 0) {
		struct stat st;
		if (lstat(s->path, &st) != 0 && errno == ENOENT) {
			retire(t, idx);
			return;
		}
		s->skipped = skip ? skip : BX_SKIP_UNREADABLE;
		say_skipped(s, err);
		return;
	}
	if (s->last && s->last->generation != buf->generation) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s", s->path);
		retire(t, idx);
		if (!(s = seg_of(t, path)))
			return;
	}
	if (t->cgroup && cgroup_allows(t, s, buf, err, sizeof err) != 0) {
		say_skipped(s, err);
		return;
	}
	if (!s->last && !(s->last = malloc(sizeof *s->last)))
		return;
	memcpy(s->last, buf, sizeof *buf);
	s->said = 0;
	s->skipped = 0;
}

void bx_stats_refresh(bx_exporter_t *ex)
{
	bs_segment_t *buf;
	if (!ex->stats || !(buf = malloc(sizeof *buf)))
		return;
	for (size_t i = 0; i < ex->stats->count; i++) {
		stats_target_t *t = &ex->stats->targets[i];
		if (!t->dir[0]) {
			seg_t *s = seg_of(t, t->path);
			if (s)
				read_seg(t, (size_t)(s - t->segs), buf);
			continue;
		}
		DIR *d = opendir(t->dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			size_t n = strlen(e->d_name);
			char path[PATH_MAX];
			if (n < 7 || strcmp(e->d_name + n - 6, ".stats") != 0 ||
			    strlen(t->dir) + 1 + n >= sizeof path)
				continue;
			memcpy(path, t->dir, strlen(t->dir));
			path[strlen(t->dir)] = '/';
			memcpy(path + strlen(t->dir) + 1, e->d_name, n + 1);
			seg_t *s = seg_of(t, path);
			if (s)
				read_seg(t, (size_t)(s - t->segs), buf);
		}
		if (d)
			closedir(d);
	}
	free(buf);
}

/* Histograms: the count is the sum of the buckets.  A writer adds a
 * bucket and the count in two stores; a reading between them must not
 * publish a histogram whose +Inf bucket differs from its _count. */
static void whole_histograms(size_t mi, uint64_t *cells)
{
	const bx_map_desc_t *m = &bx_maps[mi];
	for (size_t q = 0; q < m->nquantities; q++) {
		uint64_t *c = cells + m->quantities[q].cell, sum = 0;
		for (size_t b = 0; b <= bx_quantities[m->quantities[q].quantity].nbounds; b++)
			sum += c[2 + b];
		c[0] = sum;
	}
}

/* One segment row as a snapshot row: labels admitted under the exporter's
 * cap, ints for outcomes and filters, whole histograms. */
static int add_row(bx_exporter_t *ex, size_t mi, const bs_read_row_t *sr, struct bx_row **items, size_t *count,
                   size_t *cap)
{
	const bx_map_desc_t *m = &bx_maps[mi];
	char buf[4 * BX_LABEL_BYTES_MAX + 1];

	if (*count == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct bx_row *n = realloc(*items, nc * sizeof *n);
		if (!n)
			return -1;
		*items = n;
		*cap = nc;
	}
	struct bx_row *row = &(*items)[(*count)++];
	memset(row, 0, sizeof *row);
	for (size_t f = 0; f < m->nfields; f++) {
		if (sr->state[f] != BS_FIELD_VALUE) {
			row->labels[f] = BX_LABEL_OTHER;
			row->ints[f] = 1;
			continue;
		}
		if (m->fields[f].kind == BX_KEY_STRING)
			bx_label_sanitize(sr->text[f], sizeof sr->text[f], buf, sizeof buf);
		else
			snprintf(buf, sizeof buf, "%d", (int)sr->ints[f]);
		row->ints[f] = m->fields[f].kind == BX_KEY_STRING ? 0 : sr->ints[f];
		row->labels[f] = bx_label_admit(&ex->slots[mi][f], m->fields[f].known, m->fields[f].nknown, buf);
	}
	memcpy(row->cells, sr->cells, sizeof row->cells);
	whole_histograms(mi, row->cells);
	return 0;
}

int bx_stats_rows(bx_exporter_t *ex, size_t mi, struct bx_row **items, size_t *count, size_t *cap)
{
	for (size_t i = 0; ex->stats && i < ex->stats->count; i++) {
		stats_target_t *t = &ex->stats->targets[i];
		for (size_t k = 0; k < t->nsegs; k++) {
			const bs_segment_t *s = t->segs[k].last;
			for (size_t r = 0; s && r < s->nrows[mi]; r++)
				if (add_row(ex, mi, bs_row(s, (int)mi, r), items, count, cap) != 0)
					return -1;
		}
		for (size_t r = 0; r < t->gone[mi].count; r++)
			if (add_row(ex, mi, &t->gone[mi].rows[r], items, count, cap) != 0)
				return -1;
	}
	return 0;
}

const char *const bx_skip_reasons[BX_SKIP_COUNT] = { "", "unreadable", "uid", "cgroup", "unattributed" };

size_t bx_stats_skipped(const bx_exporter_t *ex, int reason)
{
	size_t n = 0;
	for (size_t i = 0; ex->stats && i < ex->stats->count; i++)
		for (size_t k = 0; k < ex->stats->targets[i].nsegs; k++)
			n += ex->stats->targets[i].segs[k].skipped == reason;
	return n;
}

size_t bx_stats_target_count(const bx_exporter_t *ex)
{
	return ex->stats ? ex->stats->count : 0;
}

const char *bx_stats_target_label(const bx_exporter_t *ex, size_t i)
{
	return ex->stats->targets[i].label;
}

/* Up: some segment of the target was written by a process that still
 * runs (the same process: its start time matches, not a reused PID).  A
 * --pid target is looked up by the PID it was given: the segment's own is
 * the writer's in its PID namespace (a container's); start times are the
 * same in every namespace. */
int bx_stats_target_up(const bx_exporter_t *ex, size_t i)
{
	const stats_target_t *t = &ex->stats->targets[i];
	for (size_t k = 0; k < t->nsegs; k++) {
		const bs_segment_t *s = t->segs[k].last;
		if (!s || s->state != BS_RUNNING || t->segs[k].departed || !s->start_time)
			continue;
		if (bp_process_start_time(t->pid > 0 ? (pid_t)t->pid : (pid_t)s->pid) == s->start_time)
			return 1;
	}
	return 0;
}

void bx_stats_free(bx_exporter_t *ex)
{
	if (!ex->stats)
		return;
	for (size_t i = 0; i < ex->stats->count; i++) {
		for (size_t k = 0; k < ex->stats->targets[i].nsegs; k++)
			free(ex->stats->targets[i].segs[k].last);
		free(ex->stats->targets[i].segs);
		for (int m = 0; m < BX_MAP_COUNT; m++)
			free(ex->stats->targets[i].gone[m].rows);
	}
	free(ex->stats->targets);
	free(ex->stats);
	ex->stats = NULL;
}
