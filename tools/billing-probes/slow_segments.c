/*
 * slow_segments.c -- the segments `billing-probes slow` reads
 * (slow_segments.h).
 */
#include "slow_segments.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READ_TRIES 3 /* a record being written is read again this often */

/* The directory the target's segments are in. */
static const char *slow_segment_dir(const slow_target_t *st)
{
	return st->t.pid >= 0 ? st->t.place.dir : st->t.dir;
}

/* The inode at dir/name now (0: none). */
static unsigned long long ino_at(const char *dir, const char *name)
{
	char path[2 * PATH_MAX];
	struct stat sb;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return lstat(path, &sb) == 0 ? (unsigned long long)sb.st_ino : 0;
}

/* Whether the segment open at fd has its magic, which its writer stores
 * last: a file without it (empty, or zeros) is being made, or its maker
 * died first. */
static int initialised(int fd)
{
	uint64_t magic = 0;
	return pread(fd, &magic, sizeof magic, 0) == (ssize_t)sizeof magic && magic != 0;
}

static int is_segment_name(const char *name)
{
	size_t len = strlen(name);
	return len >= 7 && len <= NAME_MAX && strcmp(name + len - 6, ".stats") == 0;
}

int slow_list_segments(slow_target_t *st, int later, char *err, size_t errlen)
{
	if (st->t.pid >= 0) {
		if (!st->n) {
			snprintf(st->segs[0].name, sizeof st->segs[0].name, "%s", st->t.place.name);
			st->n = 1;
		}
		return 0;
	}
	DIR *d = opendir(st->t.dir);
	if (!d) {
		snprintf(err, errlen, "%s: %s", st->t.dir, strerror(errno));
		return -1;
	}
	char seen[SLOW_SEGMENTS] = { 0 };
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (!is_segment_name(e->d_name))
			continue;
		size_t i = 0;
		while (i < st->n && strcmp(st->segs[i].name, e->d_name) != 0)
			i++;
		if (i == st->n) {
			if (st->n == SLOW_SEGMENTS) {
				closedir(d);
				snprintf(err, errlen, "%s: more than %d segments", st->t.dir, SLOW_SEGMENTS);
				return -1;
			}
			memset(&st->segs[i], 0, sizeof st->segs[0]);
			st->segs[i].started = later;
			memcpy(st->segs[i].name, e->d_name, strlen(e->d_name) + 1);
			st->n++;
		} else if (st->segs[i].refused && st->segs[i].ino != (unsigned long long)e->d_ino) {
			st->segs[i].refused = 0; /* another file at its name: looked at as a new one */
			st->segs[i].started = later;
			st->segs[i].next = 0;
		}
		seen[i] = 1;
	}
	closedir(d);
	size_t kept = 0; /* those gone are forgotten, the others keep their order */
	for (size_t i = 0; i < st->n; i++)
		if (seen[i])
			st->segs[kept++] = st->segs[i];
	st->n = kept;
	return 0;
}

/* Segment s opened through the checks: the fd, or -1 when it is gone or
 * not made yet, -2 when the checks refuse it (marked, the reason in err),
 * -3 with the reason in err. */
static int open_segment(slow_target_t *st, slow_segment_t *s, char *err, size_t errlen)
{
	const char *dir = slow_segment_dir(st);
	struct stat sb;
	int fd = top_segment_open(dir, s->name, st->t.user, st->t.pid >= 0 ? PR_OWNER_ONLY : PR_OWNER_OR_ROOT, &sb, err,
	                          errlen);
	if (fd < 0 && errno == ENOENT)
		return -1;
	if (fd < 0) {
		/* a directory's file the checks refuse is that file's
		 * problem, not the service's: said, and left alone */
		if (st->t.pid >= 0 || (errno != EPERM && errno != EACCES && errno != ELOOP))
			return -3;
		s->refused = 1;
		s->ino = ino_at(dir, s->name);
		return -2;
	}
	if (!initialised(fd)) { /* being made: no trail yet, looked at again next time */
		close(fd);
		return -1;
	}
	return fd;
}

int slow_target_empty(slow_target_t *st, char *why, size_t n)
{
	char first[TOP_SKIPPED_BYTES] = "", err[TOP_SKIPPED_BYTES];
	size_t usable = 0, refused = 0;
	if (slow_list_segments(st, 0, why, n) != 0)
		return -1;
	if (st->t.pid >= 0) { /* its one segment, where the process maps it or would */
		int fd = open_segment(st, &st->segs[0], why, n);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (fd != -1)
			return -1;
		snprintf(why, n, "process %d: no stats segment at %s/%s (not a stats build, or stats are off)",
		         (int)st->t.pid, slow_segment_dir(st), st->segs[0].name);
		return 1;
	}
	for (size_t i = 0; i < st->n; i++) {
		int fd = open_segment(st, &st->segs[i], err, sizeof err);
		if (fd == -3) {
			snprintf(why, n, "%s", err);
			return -1;
		}
		if (fd == -2 && !refused++)
			snprintf(first, sizeof first, "%s", err);
		st->segs[i].refused = 0; /* said when it is read, if there is a segment to read */
		if (fd >= 0) {
			usable++;
			close(fd);
		}
	}
	return top_no_segment(&st->t, usable, refused, first, why, n);
}

int slow_read_segment(slow_target_t *st, slow_segment_t *s, int lane, uint64_t since, bs_trails_t *out, char *err,
                      size_t errlen)
{
	const char *dir = slow_segment_dir(st);
	char why[512];
	memset(out, 0, sizeof *out);
	for (int tries = 0;; tries++) {
		int fd = open_segment(st, s, err, errlen);
		if (fd == -1 || fd == -2)
			return -fd; /* gone or not made: 1; refused: 2 */
		if (fd < 0)
			return -1;
		int rc = bs_trails_read_fd(fd, lane, since, out, why, sizeof why);
		close(fd);
		if (rc != 0) {
			snprintf(err, errlen, "%.300s/%s: %s", dir, s->name, why);
			return -1;
		}
		if (st->t.pid >= 0 && (out->pid != (uint32_t)st->t.ns_pid || out->start_time != st->t.start_time)) {
			snprintf(err, errlen, "%.300s/%s: written by another process (pid %u), not by %d", dir, s->name,
			         (unsigned)out->pid, (int)st->t.pid);
			bs_trails_free(out);
			return -1;
		}
		if (!out->skipped || tries + 1 == READ_TRIES)
			return 0;
		bs_trails_free(out);
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
}
