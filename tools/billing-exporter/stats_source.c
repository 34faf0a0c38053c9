/*
 * stats_source.c -- stats targets: find segments, read them
 * (lib/stats_read.c), keep each one's last good reading, and hand the
 * summed rows to the snapshot like the BPF maps' rows.  See stats_source.h.
 */
#include "stats_source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_filter.h"
#include "proc_identity.h"
#include "row_sum.h"
#include "map_row.h"
#include "stats_read.h"
#include "stats_trust.h"
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

/* Where each row of a reading is among the target's label sets
 * (served_t), per map: a writer only appends rows within a generation, so
 * a row's place is looked up once. */
typedef struct seg_places {
	uint32_t *at[BX_MAP_COUNT];
	size_t nat[BX_MAP_COUNT];
} seg_places_t;

/* One segment file followed: its last good reading stays in the sums.
 * A name that is no segment costs this entry and its path. */
typedef struct seg {
	char *path;                                      /* "DIR/NAME" (a --pid target's own path) */
	const char *name;                                /* within path: NAME */
	bs_segment_t *last;                              /* NULL until read once */
	uid_t owner;                                     /* of the file at its last reading */
	seg_places_t *places;                            /* of its last reading's rows, NULL until served */
	signed char skipped;                             /* BX_SKIP_*: why its last reading was not taken, 0 when it was */
	char said;                                       /* its problem was reported (once per segment) */
	char inside;                                     /* --cgroup: its writer, still running, was in the subtree at the last look */
	char elsewhere;                                  /* a --pid or a --binary counts its writer: never summed here */
	char binary_known;                               /* whether a --binary counts its writer is known (it does not) */
	char early;                                      /* first seen before any probe was attached */
	char refused;                                    /* refused for what the file is (refused_key): not opened again until it changes */
	uint64_t trail_next;                             /* the first of its trails not taken as an exemplar yet */
	uint64_t families_said[BS_LAYOUT_FAMILIES / 64]; /* families refused from its reading, said (one bit each) */
	file_key_t refused_key;
} seg_t;

/* A target's rows of one map as served: every label set its readings have
 * had, summed afresh at each snapshot from the readings' rows. */
typedef struct served {
	bx_row_sum_t sets;
	uint32_t *gone_at; /* the gone rows' places in sets */
	size_t ngone_at;
	unsigned char *fed; /* per set: some reading has it now (only those are served) */
	size_t fed_cap;
} served_t;

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
	/* The final readings of segments that are gone (file removed, or its
	 * path taken by a later process), summed per label set: what they
	 * counted stays in the service's totals, in memory that grows with
	 * label sets, not with the number of processes that came and went. */
	bx_row_sum_t gone[BX_MAP_COUNT];
	bs_segment_t **kept; /* final readings that could not be summed (out of memory): kept whole */
	size_t nkept;
	served_t served[BX_MAP_COUNT];
} stats_target_t;

struct bx_stats {
	stats_target_t *targets;
	size_t count;
	bx_proc_t *named; /* the process of every --pid, whichever source serves it */
	size_t nnamed;
	int started;                     /* set up: probes may be attached from now on */
	bx_trail_exemplars_t *exemplars; /* the latest slow request per bucket, from the segments taken */
	bs_segment_t scratch;            /* the reading in progress: swapped with a segment's last one when taken */
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

/* --- a --pid's segment ------------------------------------------------------- */

/* Is the segment at dir/name process t->proc's, found where its user
 * keeps it: dir and file that user's alone (BX_OWNER_ONLY), the file the
 * process maps when dev is given, its header naming the process (PID in
 * its namespace, start time)?  0 with t->path, dev and ino set, or -1
 * with the reason in err. */
static int segment_at(stats_target_t *t, const char *dir, const char *name, unsigned long long dev,
                      unsigned long long ino, char *err, size_t errlen)
{
	char why[256];
	int dfd = -1, fd = -1, skip, rc = -1;
	uid_t user;
	struct stat st;
	bs_segment_t seg_, *seg = &seg_;

	memset(seg, 0, sizeof *seg);
	if (bx_stats_dir_open(dir, (long)t->user, BX_OWNER_ONLY, &dfd, &user, why, sizeof why) != 0)
		snprintf(err, errlen, "%s: %s", dir, why);
	else if ((fd = bx_stats_file_open(dfd, name, t->user, &st, &skip, why, sizeof why)) < 0)
		snprintf(err, errlen, "%s/%s: %s", dir, name, why);
	else if (dev && ((unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino))
		snprintf(err, errlen, "%s/%s: not the file process %d maps", dir, name, t->pid);
	else if (bs_read_fd(fd, seg, why, sizeof why) != 0)
		snprintf(err, errlen, "%s/%s: %s", dir, name, why);
	else if (seg->pid != (uint32_t)t->proc.ns_pid || seg->start_time != t->proc.start_time)
		snprintf(err, errlen, "%s/%s: written by another process (pid %u, started at %llu), not by %d", dir, name,
		         (unsigned)seg->pid, (unsigned long long)seg->start_time, t->pid);
	else {
		snprintf(t->path, sizeof t->path, "%s/%s", dir, name);
		t->dev = st.st_dev;
		t->ino = st.st_ino;
		rc = 0;
	}
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	bs_segment_free(seg);
	return rc;
}

/* The segment of t->pid.  Where the exporter may read its memory maps
 * (root, or the process's user): the file it maps, reached through
 * /proc/PID/root so a container's path resolves.  Else PID.stats in the
 * directory of the process's own user (uid from /proc/PID/status):
 * /dev/shm/billing-stats-UID or a --stats-dir that is that user's; never
 * another user's directory, whatever its name.  0, or -1 with the reason. */
static int find_segment(stats_target_t *t, const stats_target_t *dirs, size_t ndirs, char *err, size_t errlen)
{
	bx_segment_place_t p;
	int r = bx_stats_segment_place(t->pid, t->proc.ns_pid, t->user, &p);
	if (r < 0) {
		snprintf(err, errlen, "it maps none");
		return -1;
	}
	if (r > 0)
		return segment_at(t, p.dir, p.name, p.dev, p.ino, err, errlen);
	/* each place tried says why not, in one line */
	size_t said = 0;
	for (size_t i = 0; i <= ndirs; i++) {
		char why[PATH_MAX + 256];
		if (i > 0 && (dirs[i - 1].pid >= 0 || dirs[i - 1].user != t->user))
			continue;
		if (segment_at(t, i ? dirs[i - 1].dir : p.dir, p.name, 0, 0, why, sizeof why) == 0)
			return 0;
		if (said < errlen)
			said += (size_t)snprintf(err + said, errlen - said, "%s%s", said ? "; " : "", why);
	}
	return -1;
}

static stats_target_t *add_target(bx_exporter_t *ex)
{
	stats_target_t *t = realloc(ex->stats->targets, (ex->stats->count + 1) * sizeof *t);
	if (!t)
		return NULL;
	ex->stats->targets = t;
	t = &t[ex->stats->count++];
	memset(t, 0, sizeof *t);
	for (int m = 0; m < BX_MAP_COUNT; m++)
		t->gone[m].native_cells = t->served[m].sets.native_cells = billing_stats_maps_[m].native_cells;
	t->pid = -1;
	t->only_uid = ex->only_uid;
	t->cgroup = ex->cgroup;
	return t;
}

/* A --stats-dir: its owner and mode checked (stats_trust.h), whose it is
 * said, one directory named once.  0, or -1 with the reason in err. */
static int add_dir(bx_exporter_t *ex, const char *dir, char *err, size_t errlen)
{
	char why[256], user[128];
	int fd;
	uid_t uid;
	struct stat st;
	if (bx_stats_dir_open(dir, bx_stats_dir_user(dir, ex->only_uid), BX_OWNER_OR_ROOT, &fd, &uid, why, sizeof why) !=
	    0) {
		snprintf(err, errlen, "--stats-dir %s: %s", dir, why);
		return -1;
	}
	fstat(fd, &st);
	close(fd);
	for (size_t i = 0; i < ex->stats->count; i++) {
		struct stat other;
		if (stat(ex->stats->targets[i].dir, &other) == 0 && other.st_dev == st.st_dev && other.st_ino == st.st_ino) {
			snprintf(err, errlen, "--stats-dir %s: the directory --stats-dir %s names already", dir,
			         ex->stats->targets[i].dir);
			return -1;
		}
	}
	stats_target_t *t = add_target(ex);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(t->dir, sizeof t->dir, "%s", dir);
	snprintf(t->label, sizeof t->label, "stats:%s", dir);
	t->user = uid;
	bx_error("--stats-dir %s: the segments of %s", dir, bx_user_text(uid, user, sizeof user));
	return 0;
}

/* Remember the process of --pid text (whichever source serves it), once.
 * 0, or -1 with the reason in err. */
static int name_process(bx_exporter_t *ex, const char *text, int pid, char *err, size_t errlen)
{
	struct bx_stats *st = ex->stats;
	for (size_t i = 0; i < st->nnamed; i++) {
		if (st->named[i].pid == pid) {
			snprintf(err, errlen, "--pid %s: named twice (it would count twice)", text);
			return -1;
		}
	}
	bx_proc_t *n = realloc(st->named, (st->nnamed + 1) * sizeof *n);
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	st->named = n;
	if (bx_proc_read(pid, &n[st->nnamed]) == 0)
		st->nnamed++;
	return 0;
}

int bx_stats_setup(bx_exporter_t *ex, int source, const char **pids, size_t *npids, const char **dirs,
                   size_t ndirs, char *err, size_t errlen)
{
	size_t kept = 0;

	if (!(ex->stats = calloc(1, sizeof *ex->stats))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < ndirs; i++)
		if (add_dir(ex, dirs[i], err, errlen) != 0)
			return -1;
	for (size_t i = 0; i < *npids; i++) {
		char why[PATH_MAX + 256] = "not a process ID";
		int pid = parse_pid(pids[i]);
		if (pid > 0 && name_process(ex, pids[i], pid, err, errlen) != 0)
			return -1;
		stats_target_t *t = source != BX_SOURCE_USDT && pid > 0 ? add_target(ex) : NULL;
		if (t) {
			t->pid = pid;
			if (bx_proc_read(pid, &t->proc) != 0)
				snprintf(why, sizeof why, "no such process");
			else {
				t->user = t->proc.uid;
				if (find_segment(t, ex->stats->targets, ndirs, why, sizeof why) == 0) {
					snprintf(t->label, sizeof t->label, "pid:%d", pid);
					continue;
				}
			}
			ex->stats->count--; /* not a stats target after all */
		}
		if (source == BX_SOURCE_STATS) {
			snprintf(err, errlen, "--pid %s: no stats segment found (is it a -Dstats=enabled build, with "
			                      "BILLING_STATS not off?): %s",
			         pids[i], why);
			return -1;
		}
		pids[kept++] = pids[i]; /* through USDT */
	}
	*npids = kept;
	if (ex->stats->count && (ex->stats->exemplars = bx_trail_exemplars_new()))
		ex->exemplars = bx_trail_exemplars_source(ex->stats->exemplars);
	return 0;
}

void bx_stats_start(bx_exporter_t *ex)
{
	bx_stats_refresh(ex);
	ex->stats->started = 1;
}

/* --- reading ------------------------------------------------------------------ */

/* A new entry for the segment at path (its name after the last '/'), or NULL. */
static seg_t *seg_new(const bx_exporter_t *ex, const char *path)
{
	seg_t *s = calloc(1, sizeof *s);
	if (!s || !(s->path = strdup(path))) {
		free(s);
		return NULL;
	}
	const char *slash = strrchr(s->path, '/');
	s->name = slash ? slash + 1 : s->path;
	s->early = !ex->stats->started;
	return s;
}

/* Its last reading's rows lose their places (a reading of another generation, or none, follows). */
static void seg_forget_places(seg_t *s)
{
	for (int m = 0; s->places && m < BX_MAP_COUNT; m++)
		free(s->places->at[m]);
	free(s->places);
	s->places = NULL;
}

/* The entry, and its last reading if the caller has not retired it. */
static void seg_free(seg_t *s)
{
	if (s->last)
		bs_segment_free(s->last);
	free(s->last);
	free(s->path);
	seg_forget_places(s);
	free(s);
}

/* A segment's final reading joins the target's gone rows (its label sets
 * summed with theirs); when there is no memory for that, or it has rows
 * of maps of another shape (another billing.d), it is kept whole. */
static void retire_reading(stats_target_t *t, bs_segment_t *old)
{
	int m = 0, described = 0;
	if (!old)
		return;
	/* rows of maps only its description lays out: the gone sums (this
	 * build's maps) cannot hold them, so the reading is kept whole */
	for (size_t sm = 0; old->layout && sm < old->layout->nmaps; sm++)
		described |= old->layout->maps[sm].build_map < 0 && old->map_rows[sm] > 0;
	for (; !described && m < BX_MAP_COUNT && bx_row_sum_reserve(&t->gone[m], old->nrows[m]) == 0; m++)
		;
	if (!described && m == BX_MAP_COUNT) {
		for (m = 0; m < BX_MAP_COUNT; m++)
			for (size_t r = 0; r < old->nrows[m]; r++)
				bx_row_sum_add(&t->gone[m], bs_row(old, m, r), bs_native(old, m, r));
	} else {
		bs_segment_t **k = realloc(t->kept, (t->nkept + 1) * sizeof *k);
		if (k) {
			t->kept = k;
			t->kept[t->nkept++] = old;
			return;
		}
	}
	bs_segment_free(old);
	free(old);
}

/* One line per segment and problem, until the segment reads cleanly again. */
static void say_skipped(seg_t *s, const char *err)
{
	if (!s->said)
		bx_error("%s: %s: skipped", s->path, err);
	s->said = 1;
}

/* --cgroup: may the reading in buf, of the segment at entry s, be taken?
 * Its writer is the process the kernel shows: a --pid target's own (found
 * from /proc at the start), else the process under the header's PID, and
 * only if it runs with the header's start time, calls itself by that PID
 * and runs as the user who owns the file, so a header naming someone
 * else's process in the cgroup is not attributed to it.  The writer is
 * looked up at each reading while it runs.  One seen in the subtree at
 * its last look keeps its segment counted after it exits (its final
 * figures, nothing lost); one seen outside, or never seen at all (gone
 * before the first look, another PID namespace's, another user's), is
 * skipped.  0 to take it, else a one-line reason in err. */
static int cgroup_allows(const stats_target_t *t, seg_t *s, const bs_segment_t *buf, char *err, size_t errlen)
{
	bx_proc_t w;
	pid_t pid = t->pid > 0 ? (pid_t)t->pid : (pid_t)buf->pid;
	int where = -1;
	if (t->pid > 0 || bx_proc_wrote((pid_t)buf->pid, buf->start_time, s->owner, &w))
		where = bx_cgroup_holds(t->cgroup, pid, buf->start_time);
	if (where >= 0)
		s->inside = where;
	if (s->inside)
		return 0;
	s->skipped = where < 0 ? BX_SKIP_UNATTRIBUTED : BX_SKIP_CGROUP;
	if (where < 0)
		snprintf(err, errlen, "its writer (pid %u) is gone, not this host's process or not the file's user's: "
		                      "its cgroup is unknown (--cgroup)",
		         (unsigned)pid);
	else
		snprintf(err, errlen, "its writer (pid %u) is outside %s (--cgroup)", (unsigned)pid, t->cgroup->given);
	return -1;
}

/* A directory's segment whose writer another target counts: a --pid
 * names the process its header names (counted there, from its segment or
 * through USDT), or its writer runs a --binary program or maps a --binary
 * library (counted through USDT).  1 when the reading must not be summed here (said once);
 * a segment whose writer cannot be looked at while a --binary may count it
 * is skipped as unattributed. */
static int counted_elsewhere(const bx_exporter_t *ex, const stats_target_t *t, seg_t *s, const bs_segment_t *buf)
{
	char why[PATH_MAX + 128];
	const struct bx_stats *st = ex->stats;
	int decided = s->elsewhere;
	for (size_t i = 0; !s->elsewhere && i < st->nnamed; i++) {
		if ((uint32_t)st->named[i].ns_pid == buf->pid && st->named[i].start_time == buf->start_time) {
			snprintf(why, sizeof why, "written by the process of --pid %d: counted there, not again by --stats-dir %s",
			         (int)st->named[i].pid, t->dir);
			s->elsewhere = 1;
		}
	}
	if (!s->elsewhere && !s->binary_known && bx_binary_target_count(ex)) {
		bx_proc_t w;
		int b = -2;
		memset(&w, 0, sizeof w);
		if (bx_proc_wrote((pid_t)buf->pid, buf->start_time, s->owner, &w))
			b = bx_binary_target_of(ex, w.pid);
		else if (s->early)
			b = -1; /* gone before any probe was attached: no --binary counted it */
		if (b >= 0) {
			snprintf(why, sizeof why, "its writer (pid %d) runs or maps what --binary %s attaches to: counted there "
			                          "through USDT, not again by --stats-dir %s",
			         (int)w.pid, ex->targets[b].binary, t->dir);
			s->elsewhere = 1;
		} else if (b == -1) {
			s->binary_known = 1;
		} else {
			s->skipped = BX_SKIP_UNATTRIBUTED;
			say_skipped(s, "its writer is gone or its memory maps unreadable: whether a --binary counts it "
			               "through USDT is unknown");
			return 1;
		}
	}
	if (s->elsewhere && !decided) {
		if (s->last) /* a reading from before any probe was attached: never shown */
			bs_segment_free(s->last);
		free(s->last);
		s->last = NULL;
		seg_forget_places(s);
		bx_error("%s: %s", s->path, why);
	}
	return s->elsewhere;
}

/* Open the segment of a --pid target: the very file found at the start. */
static int open_pid_segment(const stats_target_t *t, struct stat *st, int *why, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", t->path);
	char *slash = strrchr(dir, '/');
	*slash = '\0';
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		*why = BX_SKIP_UNREADABLE;
		snprintf(err, errlen, "%s", strerror(e));
		errno = e;
		return -1;
	}
	int fd = bx_stats_file_open(dfd, slash + 1, t->user, st, why, err, errlen);
	int e = errno;
	close(dfd);
	if (fd >= 0 && (st->st_dev != t->dev || st->st_ino != t->ino)) {
		close(fd);
		*why = BX_SKIP_UNREADABLE;
		snprintf(err, errlen, "another file than process %d's segment found at the start", t->pid);
		e = EPERM;
		fd = -1;
	}
	errno = e;
	return fd;
}

/* What refusing a file says about it: 1 when the refusal stands until
 * the file changes (its owner, mode, type, size: what fstat shows; or its
 * content once its writer had time to initialise it), 0 when it must be
 * looked at again next time.  A writer makes its file, sizes it, then
 * writes the header through a mapping (which need not change mtime), so
 * a header read before its magic is trusted to stay only once the file
 * has not changed for BX_SETTLE_S. */
#define BX_SETTLE_S 2
static int refusal_stands(int content, const struct stat *st)
{
	struct timespec now;
	if (!content || st->st_size < (off_t)sizeof(struct bs_header))
		return 1;
	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec - st->st_mtim.tv_sec > BX_SETTLE_S && now.tv_sec - st->st_ctim.tv_sec > BX_SETTLE_S;
}

static void key_of(const struct stat *st, file_key_t *k)
{
	memset(k, 0, sizeof *k);
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->uid = st->st_uid;
	k->mode = st->st_mode;
	k->size = st->st_size;
	k->blocks = st->st_blocks;
	k->mtime = st->st_mtim;
	k->ctime = st->st_ctim;
}

static int same_key(const file_key_t *a, const struct stat *st)
{
	file_key_t b;
	key_of(st, &b);
	return a->dev == b.dev && a->ino == b.ino && a->uid == b.uid && a->mode == b.mode && a->size == b.size &&
	       a->blocks == b.blocks && a->mtime.tv_sec == b.mtime.tv_sec && a->mtime.tv_nsec == b.mtime.tv_nsec &&
	       a->ctime.tv_sec == b.ctime.tv_sec && a->ctime.tv_nsec == b.ctime.tv_nsec;
}

/* Read the segment of entry s (dfd: its directory, for a --stats-dir)
 * into buf, and take it.  1 when its file is gone (the caller retires the
 * entry), else 0.  A new file at a known path (its PID reused by a later
 * process) retires the old reading into the gone rows; a segment that
 * cannot be read, or is not the service's (--uid, --cgroup), is one line,
 * once, and keeps whatever it had counted before; a refusal for what the
 * file is stands, without opening it again, until the file changes. */
static int read_seg(const bx_exporter_t *ex, stats_target_t *t, seg_t *s, int dfd, bs_segment_t *buf)
{
	char err[PATH_MAX + 256];
	struct stat st;
	int why, rc = -1, content = 0;
	int fd = t->pid > 0 ? open_pid_segment(t, &st, &why, err, sizeof err)
	                    : bx_stats_file_open(dfd, s->name, t->user, &st, &why, err, sizeof err);
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0 && t->pid < 0 && fstatat(dfd, s->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		memset(&st, 0, sizeof st); /* a key no file has: looked at again */
	if (fd >= 0 && t->only_uid >= 0 && st.st_uid != (uid_t)t->only_uid) {
		snprintf(err, sizeof err, "not owned by uid %ld (--uid)", t->only_uid);
		why = BX_SKIP_UID;
	} else if (fd >= 0) {
		why = BX_SKIP_UNREADABLE;
		rc = bs_read_fd(fd, buf, err, sizeof err);
		content = 1;
	}
	/* Its trails from the same open file, taken below only with the reading
	 * (a reading refused gives no exemplar); a segment without a trail ring
	 * gives none, its metrics as they are. */
	bs_trails_t trails = { 0 };
	char no_trails[256];
	int trailed = rc == 0 && ex->stats->exemplars &&
	              bs_trails_read_fd(fd, BS_LANE_KEPT, s->last && s->last->generation == buf->generation ? s->trail_next : 0,
	                                &trails, no_trails, sizeof no_trails) == 0 &&
	              trails.pid == buf->pid && trails.start_time == buf->start_time;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && t->pid > 0 && (buf->pid != (uint32_t)t->proc.ns_pid || buf->start_time != t->proc.start_time)) {
		snprintf(err, sizeof err, "its header names another process (pid %u) than %d", (unsigned)buf->pid, t->pid);
		why = BX_SKIP_UNATTRIBUTED;
		rc = -1;
	}
	if (rc != 0) {
		bs_trails_free(&trails);
		s->skipped = why;
		say_skipped(s, err);
		if (t->pid < 0 && st.st_ino && refusal_stands(content, &st)) {
			s->refused = 1;
			key_of(&st, &s->refused_key);
		}
		return 0;
	}
	if (s->last && s->last->generation != buf->generation) { /* a new file at this path: a new entry */
		retire_reading(t, s->last);
		s->last = NULL;
		seg_forget_places(s);
		char *path = s->path;
		const char *name = s->name;
		memset(s, 0, sizeof *s);
		s->path = path;
		s->name = name;
		s->early = !ex->stats->started;
	}
	s->owner = st.st_uid;
	int refused = t->pid < 0 && counted_elsewhere(ex, t, s, buf);
	if (!refused && t->cgroup && cgroup_allows(t, s, buf, err, sizeof err) != 0) {
		say_skipped(s, err);
		refused = 1;
	}
	if (refused || (!s->last && !(s->last = calloc(1, sizeof *s->last)))) {
		bs_trails_free(&trails);
		return 0;
	}
	if (trailed) {
		bx_trail_exemplars_take(ex->stats->exemplars, &trails);
		if (trails.count)
			s->trail_next = trails.trails[trails.count - 1].seq / 2;
	}
	bs_trails_free(&trails);
	bs_segment_t taken = *s->last; /* the reading taken, and the old one's memory for the next */
	*s->last = *buf;
	*buf = taken;
	s->said = 0;
	s->skipped = 0;
	return 0;
}

/* A refused entry whose file is as it was refused: 1, nothing more to
 * do; else 0 (read it), or -1 when the file is gone. */
static int still_refused(seg_t *s, int dfd)
{
	struct stat st;
	if (!s->refused)
		return 0;
	if (fstatat(dfd, s->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? -1 : 0;
	if (same_key(&s->refused_key, &st))
		return 1;
	s->refused = 0;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The "*.stats" names of a directory, sorted: one block of text. */
typedef struct names {
	char *text;
	const char **name;
	size_t n;
} names_t;

/* The names in directory dfd; 0, or -1 when out of memory. */
static int list_names(int dfd, names_t *out)
{
	int listing = dup(dfd);
	DIR *d = listing >= 0 ? fdopendir(listing) : NULL;
	size_t *at = NULL, cap = 0, used = 0, room = 0;
	struct dirent *e;
	int rc = 0;
	memset(out, 0, sizeof *out);
	if (!d) {
		if (listing >= 0)
			close(listing);
		return 0;
	}
	while (rc == 0 && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 7 || strcmp(e->d_name + len - 6, ".stats") != 0)
			continue;
		if (out->n == cap) {
			size_t *more = realloc(at, (cap = cap ? cap * 2 : 64) * sizeof *more);
			rc = more ? 0 : -1;
			at = more ? more : at;
		}
		if (rc == 0 && used + len + 1 > room) {
			char *more = realloc(out->text, room = (room + len + 1) * 2);
			rc = more ? 0 : -1;
			out->text = more ? more : out->text;
		}
		if (rc == 0) {
			memcpy(out->text + used, e->d_name, len + 1);
			at[out->n++] = used;
			used += len + 1;
		}
	}
	closedir(d);
	if (rc == 0 && out->n && !(out->name = malloc(out->n * sizeof *out->name)))
		rc = -1;
	for (size_t k = 0; rc == 0 && k < out->n; k++)
		out->name[k] = out->text + at[k];
	free(at);
	if (rc != 0) {
		free(out->text);
		free(out->name);
		memset(out, 0, sizeof *out);
		return -1;
	}
	if (out->n > 1) /* qsort takes no NULL array, even empty */
		qsort(out->name, out->n, sizeof *out->name, by_name);
	return 0;
}

/* Every segment of a --stats-dir, its directory checked again first (a
 * directory that no longer passes is said once and not read, its readings
 * kept).  The sorted listing is walked beside the entries (sorted by
 * name): a name new here is a new entry, an entry whose name is gone is
 * retired, a refused name unchanged since is not opened. */
static void read_dir(const bx_exporter_t *ex, stats_target_t *t, bs_segment_t *buf)
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
	seg_t **next = list_names(dfd, &names) == 0 ? malloc((t->nsegs + names.n + 1) * sizeof *next) : NULL;
	if (!next) {
		close(dfd);
		free(names.text);
		free(names.name);
		return; /* out of memory: this refresh reads nothing new, every reading kept */
	}
	size_t nnames = names.n;
	while (i < t->nsegs || j < nnames) {
		int c = i == t->nsegs ? 1 : j == nnames ? -1
		                                        : strcmp(t->segs[i]->name, names.name[j]);
		seg_t *s;
		if (c < 0) { /* its file is gone */
			retire_reading(t, t->segs[i]->last);
			t->segs[i]->last = NULL;
			seg_free(t->segs[i++]);
			continue;
		}
		if (c > 0) {
			if (snprintf(path, sizeof path, "%s/%s", t->dir, names.name[j++]) >= (int)sizeof path ||
			    !(s = seg_new(ex, path)))
				continue;
		} else {
			s = t->segs[i++];
			j++;
		}
		int r = still_refused(s, dfd);
		if (r == 0)
			r = read_seg(ex, t, s, dfd, buf) ? -1 : 0;
		if (r < 0) {
			retire_reading(t, s->last);
			s->last = NULL;
			seg_free(s);
			continue;
		}
		next[kept++] = s;
	}
	free(t->segs);
	t->segs = next;
	t->nsegs = kept;
	free(names.text);
	free(names.name);
	close(dfd);
}

void bx_stats_refresh(bx_exporter_t *ex)
{
	if (!ex->stats)
		return;
	bs_segment_t *buf = &ex->stats->scratch;
	for (size_t i = 0; i < ex->stats->count; i++) {
		stats_target_t *t = &ex->stats->targets[i];
		if (t->pid < 0) {
			read_dir(ex, t, buf);
			continue;
		}
		if (t->nsegs == 0) {
			if (!(t->segs = calloc(1, sizeof *t->segs)) || !(t->segs[0] = seg_new(ex, t->path))) {
				free(t->segs);
				t->segs = NULL;
				continue;
			}
			t->nsegs = 1;
		}
		if (read_seg(ex, t, t->segs[0], -1, buf)) {
			retire_reading(t, t->segs[0]->last);
			t->segs[0]->last = NULL;
			seg_free(t->segs[0]);
			free(t->segs);
			t->segs = NULL;
			t->nsegs = 0;
		}
	}
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

/* The places in sv of rows [*nat, n) of a reading; 0, or -1 when out of memory. */
static int place_rows(served_t *sv, uint32_t **at, size_t *nat, const bs_read_row_t *rows, size_t n)
{
	if (n <= *nat)
		return 0;
	uint32_t *more = realloc(*at, n * sizeof *more);
	if (!more)
		return -1;
	*at = more;
	if (bx_row_sum_reserve(&sv->sets, n - *nat) != 0)
		return -1;
	for (; *nat < n; ++*nat)
		more[*nat] = (uint32_t)bx_row_sum_place(&sv->sets, &rows[*nat]);
	return 0;
}

/* The n rows at their places: their first cells cells added, and their
 * native cells (row r's at native + r * the map's native cells; NULL: none). */
static void feed(served_t *sv, const uint32_t *at, const bs_read_row_t *rows, size_t n, size_t cells,
                 const uint64_t *native)
{
	for (size_t r = 0; r < n; r++) {
		bx_row_cells_add(&sv->sets.rows[at[r]], &rows[r], cells);
		bx_row_native_add(&sv->sets, at[r], native ? native + r * sv->sets.native_cells : NULL);
		sv->fed[at[r]] = 1;
	}
}

/* Target t's rows of map mi now: its label sets' cells summed afresh from
 * every reading (its segments', its kept and gone ones'); 0, or -1 when
 * out of memory.  Only the cells of this build's map (what the snapshot
 * reads) are summed; the rest stay zero. */
static int serve(stats_target_t *t, size_t mi)
{
	served_t *sv = &t->served[mi];
	size_t cells = billing_stats_maps_[mi].cells;
	bx_row_sum_t *g = &t->gone[mi];
	if (place_rows(sv, &sv->gone_at, &sv->ngone_at, g->rows, g->count) != 0)
		return -1;
	for (size_t k = 0; k < t->nsegs; k++) {
		seg_t *s = t->segs[k];
		if (s->last && !s->places && !(s->places = calloc(1, sizeof *s->places)))
			return -1;
		if (s->last && place_rows(sv, &s->places->at[mi], &s->places->nat[mi], bs_row(s->last, (int)mi, 0),
		                          s->last->nrows[mi]) != 0)
			return -1;
	}
	for (size_t k = 0; k < t->nkept; k++)
		if (bx_row_sum_reserve(&sv->sets, t->kept[k]->nrows[mi]) != 0)
			return -1;
	for (size_t k = 0; k < t->nkept; k++)
		for (size_t r = 0; r < t->kept[k]->nrows[mi]; r++)
			(void)bx_row_sum_place(&sv->sets, bs_row(t->kept[k], (int)mi, r));
	if (sv->fed_cap < sv->sets.count) {
		unsigned char *f = realloc(sv->fed, sv->sets.cap);
		if (!f)
			return -1;
		sv->fed = f;
		sv->fed_cap = sv->sets.cap;
	}
	if (sv->fed)
		memset(sv->fed, 0, sv->sets.count);
	for (size_t i = 0; i < sv->sets.count; i++)
		memset(sv->sets.rows[i].cells, 0, cells * sizeof sv->sets.rows[i].cells[0]);
	if (sv->sets.native_cells && sv->sets.count)
		memset(sv->sets.native, 0, sv->sets.count * sv->sets.native_cells * sizeof *sv->sets.native);
	feed(sv, sv->gone_at, g->rows, g->count, cells, bx_row_native(g, 0));
	for (size_t k = 0; k < t->nsegs; k++) {
		const bs_segment_t *last = t->segs[k]->last;
		if (last)
			feed(sv, t->segs[k]->places->at[mi], bs_row(last, (int)mi, 0), last->nrows[mi], cells,
			     last->nrows[mi] ? bs_native(last, (int)mi, 0) : NULL);
	}
	for (size_t k = 0; k < t->nkept; k++) {
		for (size_t r = 0; r < t->kept[k]->nrows[mi]; r++) {
			size_t at = bx_row_sum_place(&sv->sets, bs_row(t->kept[k], (int)mi, r));
			bx_row_cells_add(&sv->sets.rows[at], bs_row(t->kept[k], (int)mi, r), cells);
			bx_row_native_add(&sv->sets, at, bs_native(t->kept[k], (int)mi, r));
			sv->fed[at] = 1;
		}
	}
	return 0;
}

/* Map mi's rows of every stats target, each target's readings summed per
 * label set first: the snapshot's work follows label sets, not segments. */
int bx_stats_rows(bx_exporter_t *ex, size_t mi, struct bx_row **items, size_t *count, size_t *cap)
{
	for (size_t i = 0; ex->stats && i < ex->stats->count; i++) {
		stats_target_t *t = &ex->stats->targets[i];
		if (serve(t, mi) != 0)
			return -1;
		const served_t *sv = &t->served[mi];
		for (size_t r = 0; r < sv->sets.count; r++) {
			if (!sv->fed[r])
				continue;
			if (add_row(ex, mi, &sv->sets.rows[r], items, count, cap) != 0)
				return -1;
			(*items)[*count - 1].native = bx_row_native(&sv->sets, r);
		}
	}
	return 0;
}

const char *const bx_skip_reasons[BX_SKIP_COUNT] = { "", "unreadable", "uid", "cgroup", "unattributed" };

size_t bx_stats_skipped(const bx_exporter_t *ex, int reason)
{
	size_t n = 0;
	for (size_t i = 0; ex->stats && i < ex->stats->count; i++)
		for (size_t k = 0; k < ex->stats->targets[i].nsegs; k++)
			n += ex->stats->targets[i].segs[k]->skipped == reason;
	return n;
}

int bx_stats_each_reading(bx_exporter_t *ex, bx_reading_fn fn, void *ctx)
{
	uint64_t kept_said[BS_LAYOUT_FAMILIES / 64];
	int rc = 0;
	for (size_t i = 0; ex->stats && rc == 0 && i < ex->stats->count; i++) {
		stats_target_t *t = &ex->stats->targets[i];
		for (size_t k = 0; rc == 0 && k < t->nsegs; k++)
			if (t->segs[k]->last)
				rc = fn(ctx, t->segs[k]->path, t->segs[k]->last, t->segs[k]->families_said);
		for (size_t k = 0; rc == 0 && k < t->nkept; k++) {
			memset(kept_said, 0xff, sizeof kept_said); /* said while it was present */
			rc = fn(ctx, t->label, t->kept[k], kept_said);
		}
	}
	return rc;
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
 * runs, as the kernel shows it: a --pid target's own process (the same
 * one: its start time matches, not a later one given its PID), or for a
 * directory the process under the header's PID with the header's start
 * time, running as the file's user. */
int bx_stats_target_up(const bx_exporter_t *ex, size_t i)
{
	const stats_target_t *t = &ex->stats->targets[i];
	for (size_t k = 0; k < t->nsegs; k++) {
		const bs_segment_t *s = t->segs[k]->last;
		bx_proc_t now;
		if (!s || s->state != BS_RUNNING)
			continue;
		if (t->pid > 0 ? bx_proc_read(t->pid, &now) == 0 && now.start_time == t->proc.start_time
		               : bx_proc_wrote((pid_t)s->pid, s->start_time, t->segs[k]->owner, &now))
			return 1;
	}
	return 0;
}

size_t bx_stats_target_probe_sets(const bx_exporter_t *ex, size_t i, uint64_t *hash, size_t *probes, size_t cap)
{
	const stats_target_t *t = &ex->stats->targets[i];
	size_t n = 0;
	for (size_t k = 0; k < t->nsegs; k++) {
		const bs_segment_t *s = t->segs[k]->last;
		if (!s || !s->layout || t->segs[k]->skipped)
			continue;
		size_t j = 0;
		while (j < n && j < cap && hash[j] != s->layout->hash)
			j++;
		if (j < n)
			continue;
		if (n < cap) {
			hash[n] = s->layout->hash;
			probes[n] = s->layout->nmaps;
		}
		n++;
	}
	return n;
}

int bx_stats_target_pid(const bx_exporter_t *ex, size_t i)
{
	return ex->stats->targets[i].pid;
}

void bx_stats_free(bx_exporter_t *ex)
{
	if (!ex->stats)
		return;
	for (size_t i = 0; i < ex->stats->count; i++) {
		stats_target_t *t = &ex->stats->targets[i];
		for (size_t k = 0; k < t->nsegs; k++)
			seg_free(t->segs[k]);
		free(t->segs);
		for (size_t k = 0; k < t->nkept; k++) {
			bs_segment_free(t->kept[k]);
			free(t->kept[k]);
		}
		free(t->kept);
		for (int m = 0; m < BX_MAP_COUNT; m++) {
			bx_row_sum_free(&t->gone[m]);
			bx_row_sum_free(&t->served[m].sets);
			free(t->served[m].gone_at);
			free(t->served[m].fed);
		}
	}
	bs_segment_free(&ex->stats->scratch);
	bx_trail_exemplars_free(ex->stats->exemplars);
	ex->exemplars = NULL;
	free(ex->stats->targets);
	free(ex->stats->named);
	free(ex->stats);
	ex->stats = NULL;
}
