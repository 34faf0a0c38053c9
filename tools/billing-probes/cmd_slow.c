/*
 * cmd_slow.c -- `billing-probes slow PID | --stats-dir DIR [--follow]`:
 * the slow-request trails a stats build keeps in its segment
 * (lib/stats_trail.h), in slow_requests' layout, without root: read
 * access to the segments is enough, and the same ownership rules as top
 * and the exporter decide which files are read.
 *
 * Each trail is printed whole or not at all: a record the writer was
 * writing, or one that is not as a writer writes it, is left out and
 * said.  --follow prints trails as they are committed, and says how many
 * the ring overwrote before they could be read.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "proc_identity.h"
#include "stats_trail.h"
#include "term_text.h"
#include "top_sample.h"

#define SLOW_SEGMENTS 256
#define READ_TRIES 3 /* a record being written is read again this often */

typedef struct slow_segment {
	char name[NAME_MAX + 1];
	uint64_t next; /* the first trail not printed yet */
	int started;   /* read at least once (--follow: the first reading prints every trail held) */
} slow_segment_t;

typedef struct slow_target {
	top_target_t t;
	size_t n;
	slow_segment_t segs[SLOW_SEGMENTS];
} slow_target_t;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void print_value_string(const char *s, int cut)
{
	if (!*s)
		fputs("-", stdout);
	else
		bp_put_escaped(stdout, s);
	if (cut)
		fputs("...", stdout);
}

static void print_trail(const bs_trails_t *ts, const struct bs_trail *t, const char *segment)
{
	const bs_layout_t *l = ts->layout;
	printf("SLOW REQUEST %" PRIu64 " ", t->request_id);
	print_value_string(t->handler, 0);
	printf("  %.3f ms > %.3f ms, status %" PRId32 ", %s\n", (double)t->duration_ns / 1e6,
	       (double)t->threshold_ns / 1e6, t->status, segment);
	for (uint32_t i = 0; i < t->nevents; i++) {
		const struct bs_trail_event *e = &t->events[i];
		const bs_lkind_t *k = &l->kinds[e->kind];
		char probe[BS_LAYOUT_NAME_BYTES];
		size_t n = 0;
		for (const char *p = k->probe; *p && n + 1 < sizeof probe; p++)
			probe[n++] = p[0] == '_' && p[1] == '_' ? (p++, '-') : *p;
		probe[n] = '\0';
		printf("  +%8" PRIu64 " us  %-19s", e->offset_ns / 1000, probe);
		for (size_t s = 0; s < k->nstrs; s++) {
			printf(" %s=", k->strs[s]);
			print_value_string(e->strs[s], e->cut & (1u << s));
		}
		for (size_t v = 0; v < k->nints; v++)
			printf(" %s=%" PRId64, k->ints[v], e->ints[v]);
		fputc('\n', stdout);
	}
	if (t->lost)
		printf("  ... %" PRIu32 " more events not kept (%d per request)\n", t->lost, BS_TRAIL_EVENTS);
}

/* The segments of the target now: the process's one, or every *.stats of
 * the directory (those already known keep their place; one new after the
 * first reading holds only trails committed since). */
static int list_segments(slow_target_t *st, int later, char *err, size_t errlen)
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
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		size_t len = strlen(e->d_name), i = 0;
		if (len < 7 || len > NAME_MAX || strcmp(e->d_name + len - 6, ".stats") != 0)
			continue;
		while (i < st->n && strcmp(st->segs[i].name, e->d_name) != 0)
			i++;
		if (i < st->n)
			continue;
		if (st->n == SLOW_SEGMENTS) {
			closedir(d);
			snprintf(err, errlen, "%s: more than %d segments", st->t.dir, SLOW_SEGMENTS);
			return -1;
		}
		memset(&st->segs[st->n], 0, sizeof st->segs[0]);
		st->segs[st->n].started = later;
		memcpy(st->segs[st->n++].name, e->d_name, len + 1);
	}
	closedir(d);
	return 0;
}

/* One reading of segment s: its trails from s->next on, a record being
 * written read again.  0; 1 when the process is gone; -1 with the reason. */
static int read_segment(slow_target_t *st, slow_segment_t *s, bs_trails_t *out, char *err, size_t errlen)
{
	const char *dir = st->t.pid >= 0 ? st->t.place.dir : st->t.dir;
	char why[512];
	for (int tries = 0;; tries++) {
		struct stat sb;
		int fd = top_segment_open(dir, s->name, st->t.user, st->t.pid >= 0 ? BX_OWNER_ONLY : BX_OWNER_OR_ROOT, &sb,
		                          err, errlen);
		if (fd < 0)
			return st->t.pid >= 0 && errno == ENOENT ? 1 : -1;
		int rc = bs_trails_read_fd(fd, BS_LANE_RECENT, s->started ? s->next : 0, out, why, sizeof why);
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

/* Print what each segment holds past what was printed.  The number of
 * records left out (not whole or not valid), or -1 with the reason. */
static long print_new(slow_target_t *st, int follow, char *err, size_t errlen)
{
	long left_out = 0;
	if (list_segments(st, follow, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < st->n; i++) {
		slow_segment_t *s = &st->segs[i];
		bs_trails_t ts;
		int rc = read_segment(st, s, &ts, err, errlen);
		if (rc < 0)
			return -1;
		if (rc > 0)
			continue;
		if (follow && s->started && ts.first > s->next)
			printf("(%s: %" PRIu64 " trails lost: the ring, %d trails, was overwritten before they were read)\n",
			       s->name, ts.first - s->next, BS_TRAIL_RECORDS);
		else if (!follow && ts.first > 0)
			printf("(%s: %" PRIu64 " older trails gone: the ring keeps the last %d)\n", s->name, ts.first,
			       BS_TRAIL_RECORDS);
		for (size_t k = 0; k < ts.count; k++)
			print_trail(&ts, &ts.trails[k], s->name);
		left_out += (long)ts.skipped;
		if (ts.untracked && !follow)
			printf("(%s: %" PRIu64 " requests not followed: more than 256 open at once, or an ID reused while "
			       "open)\n",
			       s->name, ts.untracked);
		s->next = ts.committed;
		s->started = 1;
		bs_trails_free(&ts);
	}
	fflush(stdout);
	return left_out;
}

int bp_cmd_slow(const bp_options_t *opt)
{
	char err[2048];
	if ((opt->target_count > 0) == (opt->stats_dir != NULL))
		return bp_usage_error("slow: give a PID or --stats-dir DIR (one of them)");
	slow_target_t *st = calloc(1, sizeof *st);
	if (!st) {
		bp_error("slow", "out of memory");
		return BP_EXIT_ERROR;
	}
	if (top_target_find(&st->t, opt->target_count ? opt->targets[0] : NULL, opt->stats_dir, err, sizeof err) != 0) {
		bp_error("slow", err);
		free(st);
		return BP_EXIT_ERROR;
	}
	int status = BP_EXIT_OK;
	long left_out = print_new(st, 0, err, sizeof err);
	if (opt->follow && left_out >= 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		double interval = opt->interval > 0 ? opt->interval : 1;
		/* said once the first reading is printed: what follows is new */
		bp_printf_escaped(stdout, "# %s: the trails held printed; new ones every %g s",
		                  opt->target_count ? opt->targets[0] : opt->stats_dir, interval);
		printf("\n");
		fflush(stdout);
		while (!stop && left_out >= 0) {
			struct timespec ts = { (time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9) };
			nanosleep(&ts, NULL);
			if (!stop) {
				long more = print_new(st, 1, err, sizeof err);
				left_out = more < 0 ? -1 : left_out + more;
			}
		}
	}
	if (left_out < 0) {
		bp_error("slow", err);
		status = BP_EXIT_ERROR;
	} else if (left_out > 0) {
		char why[128];
		snprintf(why, sizeof why, "%ld trails left out: not whole when read, or not as a writer writes them",
		         left_out);
		bp_error("slow", why);
		status = BP_EXIT_FAIL;
	}
	free(st);
	return status;
}
