/*
 * stats_targets.c -- the stats targets found and trusted (stats_state.h):
 * --stats-dir directories and --pid segments, a directory's names, whose
 * a file is and who wrote a segment, as the kernel says.  Reading what
 * is found, and the targets started and freed with their segments:
 * stats_segments.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats_state.h"
#include "stats_trust.h"

int bx_source_by_name(const char *name)
{
	return strcmp(name, "auto") == 0    ? BX_SOURCE_AUTO
	       : strcmp(name, "stats") == 0 ? BX_SOURCE_STATS
	       : strcmp(name, "usdt") == 0  ? BX_SOURCE_USDT
	                                    : -1;
}

/* --- a --pid's segment ------------------------------------------------------- */

/* Is the segment at dir/name process t->proc's, found where its user
 * keeps it: dir and file that user's alone (PR_OWNER_ONLY), the file the
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
	if (pr_stats_dir_open(dir, (long)t->user, PR_OWNER_ONLY, &dfd, &user, why, sizeof why) != 0)
		snprintf(err, errlen, "%s: %s", dir, why);
	else if ((fd = pr_stats_file_open(dfd, name, t->user, &st, &skip, why, sizeof why)) < 0)
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
	pr_segment_place_t p;
	int r = pr_stats_segment_place(t->pid, t->proc.ns_pid, t->user, &p);
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

static stats_target_t *add_target(bx_stats_t *stats)
{
	stats_target_t *t = realloc(stats->targets, (stats->count + 1) * sizeof *t);
	if (!t)
		return NULL;
	stats->targets = t;
	t = &t[stats->count++];
	memset(t, 0, sizeof *t);
	for (int m = 0; m < BX_MAP_COUNT; m++)
		t->sums.map[m].native_cells = billing_stats_maps_[m].native_cells;
	t->pid = -1;
	t->awaited = -2;
	t->only_uid = stats->scope.only_uid;
	t->cgroup = stats->scope.cgroup;
	return t;
}

/* A --stats-dir: its owner and mode checked (stats_trust.h), whose it is
 * said, one directory named once.  0, or -1 with the reason in err. */
static int add_dir(bx_stats_t *stats, const char *dir, char *err, size_t errlen)
{
	char why[256], user[128];
	int fd;
	uid_t uid;
	struct stat st;
	long expected = pr_stats_dir_user(dir, stats->scope.only_uid);
	/* A directory not there yet is read when it appears (a service that
	 * starts after its exporter makes it): its owner and mode are checked
	 * then, and until then it has no segment, so no figure. */
	int absent = lstat(dir, &st) != 0 && errno == ENOENT;
	if (!absent) {
		if (pr_stats_dir_open(dir, expected, PR_OWNER_OR_ROOT, &fd, &uid, why, sizeof why) != 0) {
			snprintf(err, errlen, "--stats-dir %s: %s", dir, why);
			return -1;
		}
		fstat(fd, &st);
		close(fd);
	}
	for (size_t i = 0; i < stats->count; i++) {
		struct stat other;
		if (absent ? strcmp(stats->targets[i].dir, dir) == 0
		           : stat(stats->targets[i].dir, &other) == 0 && other.st_dev == st.st_dev &&
		                 other.st_ino == st.st_ino) {
			snprintf(err, errlen, "--stats-dir %s: the directory --stats-dir %s names already", dir,
			         stats->targets[i].dir);
			return -1;
		}
	}
	stats_target_t *t = add_target(stats);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(t->dir, sizeof t->dir, "%s", dir);
	snprintf(t->label, sizeof t->label, "stats:%s", dir);
	if (absent) {
		t->awaited = expected;
		t->dir_said = 1;
		bx_error("--stats-dir %s: not there yet: read when it appears, its owner checked then", dir);
		return 0;
	}
	t->awaited = -2;
	t->user = uid;
	bx_error("--stats-dir %s: the segments of %s", dir, pr_user_text(uid, user, sizeof user));
	return 0;
}

/* Remember the process of --pid text (whichever source serves it), once.
 * 0, or -1 with the reason in err. */
static int name_process(bx_stats_t *stats, const char *text, int pid, char *err, size_t errlen)
{
	for (size_t i = 0; i < stats->nnamed; i++) {
		if (stats->named[i].pid == pid) {
			snprintf(err, errlen, "--pid %s: named twice (it would count twice)", text);
			return -1;
		}
	}
	pr_proc_t *n = realloc(stats->named, (stats->nnamed + 1) * sizeof *n);
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	stats->named = n;
	if (pr_proc_read(pid, &n[stats->nnamed]) == 0)
		stats->nnamed++;
	return 0;
}

int bx_stats_setup(bx_stats_t **st, const bx_stats_scope_t *scope, int source, const char **pids, size_t *npids,
                   const char **dirs, size_t ndirs, char *err, size_t errlen)
{
	size_t kept = 0;
	bx_stats_t *stats = *st = calloc(1, sizeof *stats);
	if (!stats) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	stats->scope = *scope;
	for (size_t i = 0; i < ndirs; i++)
		if (add_dir(stats, dirs[i], err, errlen) != 0)
			return -1;
	for (size_t i = 0; i < *npids; i++) {
		char why[PATH_MAX + 256] = "not a process ID";
		int pid = bx_pid_parse(pids[i]);
		if (pid > 0 && name_process(stats, pids[i], pid, err, errlen) != 0)
			return -1;
		stats_target_t *t = source != BX_SOURCE_USDT && pid > 0 ? add_target(stats) : NULL;
		if (t) {
			t->pid = pid;
			if (pr_proc_read(pid, &t->proc) != 0)
				snprintf(why, sizeof why, "no such process");
			else {
				t->user = t->proc.uid;
				if (find_segment(t, stats->targets, ndirs, why, sizeof why) == 0) {
					snprintf(t->label, sizeof t->label, "pid:%d", pid);
					continue;
				}
			}
			stats->count--; /* not a stats target after all */
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
	if (stats->count)
		stats->exemplars = bx_trail_exemplars_new();
	return 0;
}

int bx_stats_check_overlap(const bx_stats_t *stats, char *err, size_t errlen)
{
	for (size_t i = 0; i < stats->count; i++) {
		int pid = stats->targets[i].pid;
		int b = pid > 0 && bx_binary_target_count(stats->scope.usdt) ? bx_binary_target_of(stats->scope.usdt, pid) : -1;
		if (b == -1)
			continue;
		if (b >= 0)
			snprintf(err, errlen, "--pid %d maps a file --binary %s attaches to: its fires would count twice, from "
			                      "its stats segment and through USDT (name it once)",
			         pid, stats->scope.usdt->items[b].binary);
		else
			snprintf(err, errlen, "--pid %d: its executable or memory maps cannot be read, so whether --binary "
			                      "counts it too is unknown (run as root or as its user)",
			         pid);
		return -1;
	}
	return 0;
}

/* --- a segment's file ---------------------------------------------------------- */

int bx_stats_seg_open(const stats_target_t *t, const seg_t *s, int dfd, struct stat *st, int *why, char *err,
                      size_t errlen)
{
	if (t->pid < 0)
		return pr_stats_file_open(dfd, s->name, t->user, st, why, err, errlen);
	/* a --pid target's: the very file found at the start */
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", t->path);
	char *slash = strrchr(dir, '/');
	*slash = '\0';
	int pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0) {
		int e = errno;
		*why = BX_SKIP_UNREADABLE;
		snprintf(err, errlen, "%s", strerror(e));
		errno = e;
		return -1;
	}
	int fd = pr_stats_file_open(pfd, slash + 1, t->user, st, why, err, errlen);
	int e = errno;
	close(pfd);
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
int bx_stats_refusal_stands(int content, const struct stat *st)
{
	struct timespec now;
	if (!content || st->st_size < (off_t)sizeof(struct bs_header))
		return 1;
	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec - st->st_mtim.tv_sec > BX_SETTLE_S && now.tv_sec - st->st_ctim.tv_sec > BX_SETTLE_S;
}

void bx_stats_key_of(const struct stat *st, file_key_t *k)
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

int bx_stats_same_key(const file_key_t *a, const struct stat *st)
{
	file_key_t b;
	bx_stats_key_of(st, &b); /* zeroed first: the padding compares too */
	return memcmp(a, &b, sizeof b) == 0;
}

/* --- a directory's names ------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
	return strcmp(((const listed_t *)a)->name, ((const listed_t *)b)->name);
}

void bx_stats_names_free(names_t *n)
{
	free(n->text);
	free(n->e);
	memset(n, 0, sizeof *n);
}

/* The "*.stats" names of directory dfd, sorted, and their inodes: one
 * block of text. */
int bx_stats_list_names(int dfd, names_t *out)
{
	int listing = dup(dfd);
	DIR *d = listing >= 0 ? fdopendir(listing) : NULL;
	size_t cap = 0, used = 0, room = 0;
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
			listed_t *more = realloc(out->e, (cap = cap ? cap * 2 : 64) * sizeof *more);
			rc = more ? 0 : -1;
			out->e = more ? more : out->e;
		}
		if (rc == 0 && used + len + 1 > room) {
			char *more = realloc(out->text, room = (room + len + 1) * 2);
			rc = more ? 0 : -1;
			out->text = more ? more : out->text;
		}
		if (rc == 0) {
			memcpy(out->text + used, e->d_name, len + 1);
			out->e[out->n++] = (listed_t){ (const char *)(uintptr_t)used, e->d_ino }; /* an offset until the text stops moving */
			used += len + 1;
		}
	}
	closedir(d);
	if (rc != 0) {
		bx_stats_names_free(out);
		return -1;
	}
	for (size_t k = 0; k < out->n; k++)
		out->e[k].name = out->text + (uintptr_t)out->e[k].name;
	if (out->n > 1) /* qsort takes no NULL array, even empty */
		qsort(out->e, out->n, sizeof *out->e, by_name);
	return 0;
}

/* --- who wrote it --------------------------------------------------------------- */

void bx_stats_say_skipped(seg_t *s, const char *err)
{
	if (!s->said)
		bx_error("%s: %s: skipped", s->path, err);
	s->said = 1;
}

/* --cgroup: its writer is the process the kernel shows: a --pid target's
 * own (found from /proc at the start), else the process under the
 * header's PID, and only if it runs with the header's start time, calls
 * itself by that PID and runs as the user who owns the file, so a header
 * naming someone else's process in the cgroup is not attributed to it.
 * The writer is looked up at each reading while it runs.  One seen in the
 * subtree at its last look keeps its segment counted after it exits (its
 * final figures, nothing lost); one seen outside, or never seen at all
 * (gone before the first look, another PID namespace's, another user's),
 * is skipped. */
int bx_stats_cgroup_allows(const stats_target_t *t, seg_t *s, const struct bs_header *h, char *err, size_t errlen)
{
	pr_proc_t w;
	pid_t pid = t->pid > 0 ? (pid_t)t->pid : (pid_t)h->pid;
	int where = -1;
	if (t->pid > 0 || pr_proc_wrote((pid_t)h->pid, h->start_time, s->owner, &w))
		where = bx_cgroup_holds(t->cgroup, pid, h->start_time);
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
 * library (counted through USDT): said once, 1.  A segment whose writer
 * cannot be looked at while a --binary may count it is skipped as
 * unattributed: 1 as well, s->skipped set. */
int bx_stats_counted_elsewhere(const bx_stats_t *stats, const stats_target_t *t, seg_t *s, const struct bs_header *h)
{
	char why[PATH_MAX + 128];
	int elsewhere = 0;
	for (size_t i = 0; !elsewhere && i < stats->nnamed; i++) {
		if ((uint32_t)stats->named[i].ns_pid == h->pid && stats->named[i].start_time == h->start_time) {
			snprintf(why, sizeof why, "written by the process of --pid %d: counted there, not again by --stats-dir %s",
			         (int)stats->named[i].pid, t->dir);
			elsewhere = 1;
		}
	}
	if (!elsewhere && !s->binary_known && bx_binary_target_count(stats->scope.usdt)) {
		pr_proc_t w;
		int b = -2;
		memset(&w, 0, sizeof w);
		if (pr_proc_wrote((pid_t)h->pid, h->start_time, s->owner, &w))
			b = bx_binary_target_of(stats->scope.usdt, w.pid);
		else if (s->early)
			b = -1; /* gone before any probe was attached: no --binary counted it */
		if (b >= 0) {
			snprintf(why, sizeof why, "its writer (pid %d) runs or maps what --binary %s attaches to: counted there "
			                          "through USDT, not again by --stats-dir %s",
			         (int)w.pid, stats->scope.usdt->items[b].binary, t->dir);
			elsewhere = 1;
		} else if (b == -1) {
			s->binary_known = 1;
		} else {
			s->skipped = BX_SKIP_UNATTRIBUTED;
			bx_stats_say_skipped(s, "its writer is gone or its memory maps unreadable: whether a --binary counts it "
			                        "through USDT is unknown");
			return 1;
		}
	}
	if (elsewhere)
		bx_error("%s: %s", s->path, why);
	return elsewhere;
}

/* --- what the targets show ----------------------------------------------------- */

const char *const bx_skip_reasons[BX_SKIP_COUNT] = { "", "unreadable", "uid", "cgroup", "unattributed" };

size_t bx_stats_skipped(const bx_stats_t *stats, int reason)
{
	size_t n = 0;
	for (size_t i = 0; stats && i < stats->count; i++)
		for (size_t k = 0; k < stats->targets[i].nsegs; k++)
			n += stats->targets[i].segs[k]->skipped == reason;
	return n;
}

size_t bx_stats_target_count(const bx_stats_t *stats)
{
	return stats ? stats->count : 0;
}

const char *bx_stats_target_label(const bx_stats_t *stats, size_t i)
{
	return stats->targets[i].label;
}

/* Up: some segment of the target was written by a process that still
 * runs, as the kernel shows it: a --pid target's own process (the same
 * one: its start time matches, not a later one given its PID), or for a
 * directory the process under the header's PID with the header's start
 * time, running as the file's user.  A FINAL segment's writer is gone. */
int bx_stats_target_up(const bx_stats_t *stats, size_t i)
{
	const stats_target_t *t = &stats->targets[i];
	for (size_t k = 0; k < t->nsegs; k++) {
		const seg_t *s = t->segs[k];
		pr_proc_t now;
		if (s->stage != SEG_LIVE || s->state != BS_RUNNING)
			continue;
		if (t->pid > 0 ? pr_proc_read(t->pid, &now) == 0 && now.start_time == t->proc.start_time
		               : pr_proc_wrote((pid_t)s->pid, s->start_time, s->owner, &now))
			return 1;
	}
	return 0;
}

size_t bx_stats_target_probe_sets(const bx_stats_t *stats, size_t i, uint64_t *hash, size_t *probes, size_t cap)
{
	const stats_target_t *t = &stats->targets[i];
	size_t n = 0;
	for (size_t k = 0; k < t->nsegs; k++) {
		const seg_t *s = t->segs[k];
		if ((s->stage != SEG_LIVE && s->stage != SEG_FINAL) || s->skipped)
			continue;
		size_t j = 0;
		while (j < n && j < cap && hash[j] != s->desc_hash)
			j++;
		if (j < n)
			continue;
		if (n < cap) {
			hash[n] = s->desc_hash;
			probes[n] = s->nmaps;
		}
		n++;
	}
	return n;
}

const bx_exemplar_source_t *bx_stats_exemplars(const bx_stats_t *stats)
{
	return stats && stats->exemplars ? bx_trail_exemplars_source(stats->exemplars) : NULL;
}
