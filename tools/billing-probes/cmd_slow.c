/*
 * cmd_slow.c -- `billing-probes slow PID | --stats-dir DIR [--id ID |
 * --follow]`: the slow-request trails a stats build keeps in its segment
 * (lib/stats_trail.h), in slow_requests' layout, without root: read
 * access to the segments is enough, and the same ownership rules as top
 * and the exporter decide which files are read (slow_segments.h).
 *
 * Each trail is printed whole or not at all: a record the writer was
 * writing, or one that is not as a writer writes it, is left out and
 * said.  --follow prints trails as they are committed, and says how many
 * the ring overwrote before they could be read.  A directory that holds
 * no segment to read (a typo, a service not started), or a process that
 * maps none, is refused in one line, as top refuses it
 * (slow_target_empty).  --id prints the trail of
 * one request, the one an exemplar names: the ring's kept lane holds it
 * as long as the exporter serves it.  Everything printed that a segment
 * or a directory gave (names, handlers, arguments) goes through the
 * terminal escaper (term_text.h): another user may have written it.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "slow_segments.h"
#include "term_text.h"

/* seconds between two looks at the segments without --interval */
#define BP_SLOW_INTERVAL_S 1

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
		pr_put_escaped(stdout, s);
	if (cut)
		fputs("...", stdout);
}

static void print_trail(const bs_trails_t *ts, const struct bs_trail *t, const char *segment)
{
	const bs_layout_t *l = ts->layout;
	printf("SLOW REQUEST %" PRIu64 " ", t->request_id);
	print_value_string(t->handler, 0);
	printf("  %.3f ms > %.3f ms, status %" PRId32 ", ", (double)t->duration_ns / 1e6, (double)t->threshold_ns / 1e6,
	       t->status);
	pr_put_escaped(stdout, segment);
	fputc('\n', stdout);
	for (uint32_t i = 0; i < t->nevents; i++) {
		const struct bs_trail_event *e = &t->events[i];
		const bs_lkind_t *k = &l->kinds[e->kind];
		char probe[BS_LAYOUT_NAME_BYTES];
		size_t n = 0;
		for (const char *p = k->probe; *p && n + 1 < sizeof probe; p++)
			probe[n++] = p[0] == '_' && p[1] == '_' ? (p++, '-') : *p;
		probe[n] = '\0';
		printf("  +%8" PRIu64 " us  ", e->offset_ns / 1000);
		pr_put_escaped(stdout, probe);
		printf("%*s", 19 - (int)(pr_escaped_width(probe) < 19 ? pr_escaped_width(probe) : 19), "");
		for (size_t s = 0; s < k->nstrs; s++) {
			fputc(' ', stdout);
			pr_put_escaped(stdout, k->strs[s]);
			fputc('=', stdout);
			print_value_string(e->strs[s], e->cut & (1u << s));
		}
		for (size_t v = 0; v < k->nints; v++) {
			fputc(' ', stdout);
			pr_put_escaped(stdout, k->ints[v]);
			printf("=%" PRId64, e->ints[v]);
		}
		fputc('\n', stdout);
	}
	if (t->lost)
		printf("  ... %" PRIu32 " more events not kept (%d per request)\n", t->lost, BS_TRAIL_EVENTS);
}

/* A segment the checks refused: one line, once (slow_segments.h). */
static void say_refused(const char *err)
{
	char why[2200];
	snprintf(why, sizeof why, "%s: skipped", err);
	bp_error("slow", why);
}

/* Print what each segment holds past what was printed.  The number of
 * records left out (not whole or not valid), or -1 with the reason. */
static long print_new(slow_target_t *st, int follow, char *err, size_t errlen)
{
	long left_out = 0;
	if (slow_list_segments(st, follow, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < st->n; i++) {
		slow_segment_t *s = &st->segs[i];
		bs_trails_t ts;
		if (s->refused)
			continue;
		int rc = slow_read_segment(st, s, BS_LANE_RECENT, s->started ? s->next : 0, &ts, err, errlen);
		if (rc == 2)
			say_refused(err);
		if (rc < 0)
			return -1;
		if (rc > 0)
			continue;
		if (follow && s->started && ts.first > s->next) {
			pr_printf_escaped(stdout, "(%s: %" PRIu64 " trails lost: the ring, %d trails, was overwritten before "
			                          "they were read)",
			                  s->name, ts.first - s->next, BS_TRAIL_RECORDS);
			fputc('\n', stdout);
		} else if (!follow && ts.first > 0) {
			pr_printf_escaped(stdout, "(%s: %" PRIu64 " older trails gone: the ring keeps the last %d)", s->name,
			                  ts.first, BS_TRAIL_RECORDS);
			fputc('\n', stdout);
		}
		for (size_t k = 0; k < ts.count; k++)
			print_trail(&ts, &ts.trails[k], s->name);
		left_out += (long)ts.skipped;
		if (ts.untracked && !follow) {
			pr_printf_escaped(stdout, "(%s: %" PRIu64 " requests not followed: more than 256 open at once, or "
			                          "an ID reused while open)",
			                  s->name, ts.untracked);
			fputc('\n', stdout);
		}
		s->next = ts.committed;
		s->started = 1;
		bs_trails_free(&ts);
	}
	fflush(stdout);
	return left_out;
}

/* --id: the trail of request id in each segment that holds it (the kept
 * lane, else the recent one: a trail in both is printed once).  How many
 * were printed, or -1 with the reason; *left_out: records not read whole. */
static long print_id(slow_target_t *st, uint64_t id, long *left_out, char *err, size_t errlen)
{
	long found = 0;
	if (slow_list_segments(st, 0, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < st->n; i++) {
		slow_segment_t *s = &st->segs[i];
		int printed = 0;
		for (int lane = BS_LANE_KEPT; lane >= BS_LANE_RECENT && !printed; lane--) {
			bs_trails_t ts;
			int rc = slow_read_segment(st, s, lane, 0, &ts, err, errlen);
			if (rc == 2)
				say_refused(err);
			if (rc < 0)
				return -1;
			if (rc > 0)
				break;
			for (size_t k = ts.count; k-- > 0 && !printed;)
				if (ts.trails[k].request_id == id) {
					print_trail(&ts, &ts.trails[k], s->name);
					printed = 1;
				}
			*left_out += (long)ts.skipped;
			bs_trails_free(&ts);
		}
		found += printed;
	}
	fflush(stdout);
	return found;
}

static int follow_trails(slow_target_t *st, const bp_options_t *opt, long *left_out, char *err, size_t errlen)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	double interval = opt->interval > 0 ? opt->interval : BP_SLOW_INTERVAL_S;
	/* said once the first reading is printed: what follows is new */
	pr_printf_escaped(stdout, "# %s: the trails held printed; new ones every %g s",
	                  opt->target_count ? opt->targets[0] : opt->stats_dir, interval);
	fputc('\n', stdout);
	fflush(stdout);
	while (!stop) {
		struct timespec ts = { (time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9) };
		nanosleep(&ts, NULL);
		if (stop)
			break;
		long more = print_new(st, 1, err, errlen);
		if (more < 0)
			return -1;
		*left_out += more;
	}
	return 0;
}

int bp_cmd_slow(const bp_options_t *opt)
{
	char err[2048];
	if ((opt->target_count > 0) == (opt->stats_dir != NULL))
		return bp_usage_error("slow: give a PID or --stats-dir DIR (one of them)");
	if (opt->request_id_given && opt->follow)
		return bp_usage_error("slow: --id prints one trail, --follow every new one: not both");
	slow_target_t *st = calloc(1, sizeof *st);
	if (!st) {
		bp_error("slow", "out of memory");
		return BP_EXIT_ERROR;
	}
	/* nothing printed from a directory without a segment would read as a
	 * service without slow requests: refused, as top refuses it */
	if (top_target_find(&st->t, opt->target_count ? opt->targets[0] : NULL, opt->stats_dir, err, sizeof err) != 0 ||
	    slow_target_empty(st, err, sizeof err) != 0) {
		bp_error(opt->stats_dir ? opt->stats_dir : "slow", err);
		free(st);
		return BP_EXIT_ERROR;
	}
	int status = BP_EXIT_OK;
	long left_out = 0, rc;
	if (opt->request_id_given) {
		rc = print_id(st, opt->request_id, &left_out, err, sizeof err);
		if (rc == 0) {
			snprintf(err, sizeof err,
			         "request %" PRIu64 ": no trail in the %zu segment%s read (a segment keeps the last %d slow "
			         "trails, and those kept for exemplars while the exporter serves them)",
			         opt->request_id, st->n, st->n == 1 ? "" : "s", BS_TRAIL_RECORDS);
			bp_error("slow", err);
			status = BP_EXIT_FAIL;
		}
	} else {
		rc = print_new(st, 0, err, sizeof err);
		if (rc >= 0) {
			left_out = rc;
			if (opt->follow)
				rc = follow_trails(st, opt, &left_out, err, sizeof err);
		}
	}
	if (rc < 0) {
		bp_error("slow", err);
		status = BP_EXIT_ERROR;
	} else if (left_out > 0) {
		char why[128];
		snprintf(why, sizeof why, "%ld trails left out: not whole when read, or not as a writer writes them",
		         left_out);
		bp_error("slow", why);
		status = status == BP_EXIT_OK ? BP_EXIT_FAIL : status;
	}
	free(st);
	return status;
}
