/*
 * cmd_top.c -- `billing-probes top PID | --stats-dir DIR`: a live view of
 * a service's stats segments, in the manner of varnishstat.  Each
 * interval shows what happened in it: invoices, payments (approved %),
 * refunds and errors per second, and per handler requests and slow
 * requests per second with p50/p95/p99 from the duration histogram's
 * bucket deltas (slow: over the threshold the segment publishes, always a
 * bucket bound, so the count is exact; top_sample.c).  A percentile
 * is shown as the upper bound of the bucket it falls in ("<=250ms"):
 * that much is certain, where a figure interpolated inside the bucket is
 * a guess.  No root: read access to the segments is enough.
 *
 * Below them, every other metric the segments describe (a team's own
 * probe's counter, the db and gateway histograms), read from each
 * segment's description by name: its change in the interval.
 *
 * A figure that may be wrong is not shown: an interval in which a counter
 * went backwards or the set of segments changed (a segment replaced, a
 * process started or gone) is restarted and says so; a process that
 * exits is shown as gone; a directory without a running writer's segment
 * (a typo, a service not started or stopped) is refused at the start and,
 * when it empties later, said on the screen until a writer is back (zeros
 * would read as an idle service).  --once prints one interval as plain
 * text.
 *
 * Every byte of foreign text (file names, handler names, the reasons a
 * reading failed, which name other users' files) reaches the terminal
 * through the one escaper (term_text.h), live or not; a directory's file
 * that is not the user's segment (another user's, in a sticky directory)
 * is left out in one line.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "term_text.h"
#include "top_sample.h"

/* seconds between two screens without --interval */
#define BP_TOP_INTERVAL_S 1

typedef struct top_delta {
	double seconds;
	top_sample_t d; /* counts in the interval */
} top_delta_t;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sub(uint64_t now, uint64_t then, uint64_t *out)
{
	if (now < then)
		return -1;
	*out = now - then;
	return 0;
}

/* cur - prev into out.  -1 (with the reason) when it cannot be told:
 * another set of segments, or a counter that went backwards. */
static int delta(const top_sample_t *prev, const top_sample_t *cur, top_sample_t *out, char *why, size_t n)
{
	if (prev->nsegments != cur->nsegments ||
	    memcmp(prev->segment_ids, cur->segment_ids, cur->nsegments * sizeof cur->segment_ids[0]) != 0) {
		snprintf(why, n, "the segments changed (a process started, exited or was replaced)");
		return -1;
	}
	if (top_sample_copy(out, cur) != 0) {
		snprintf(why, n, "out of memory");
		return -1;
	}
	int bad = sub(cur->invoices, prev->invoices, &out->invoices) | sub(cur->payments, prev->payments, &out->payments) |
	          sub(cur->approved, prev->approved, &out->approved) | sub(cur->declined, prev->declined, &out->declined) |
	          sub(cur->outcome_unknown, prev->outcome_unknown, &out->outcome_unknown) |
	          sub(cur->refunds, prev->refunds, &out->refunds) | sub(cur->errors, prev->errors, &out->errors);
	if (prev->nbounds && cur->nbounds != prev->nbounds)
		bad = -1;
	for (size_t h = 0; h < cur->nhandlers && !bad; h++) {
		const top_handler_t *p = NULL;
		for (size_t k = 0; k < prev->nhandlers && !p; k++)
			if (strcmp(prev->handlers[k].name, cur->handlers[h].name) == 0)
				p = &prev->handlers[k];
		if (!p)
			continue; /* a handler's first requests: its row starts at zero */
		bad |= sub(cur->handlers[h].requests, p->requests, &out->handlers[h].requests);
		bad |= sub(cur->handlers[h].slow, p->slow, &out->handlers[h].slow);
		out->handlers[h].slow_unknown |= p->slow_unknown;
		for (size_t b = 0; b <= cur->nbounds; b++)
			bad |= sub(cur->handlers[h].buckets[b], p->buckets[b], &out->handlers[h].buckets[b]);
	}
	for (size_t k = 0; k < prev->nhandlers && !bad; k++) {
		size_t h = 0;
		while (h < cur->nhandlers && strcmp(prev->handlers[k].name, cur->handlers[h].name) != 0)
			h++;
		bad = h == cur->nhandlers ? -1 : 0;
	}
	/* the same segments describe the same metrics: one missing is a
	 * segment replaced by another build's */
	bad |= cur->nmetrics != prev->nmetrics ? -1 : 0;
	for (size_t m = 0; m < cur->nmetrics && !bad; m++) {
		const top_metric_t *c = &cur->metrics[m], *p = &prev->metrics[m];
		top_metric_t *o = &out->metrics[m];
		o->differs |= p->differs;
		if (strcmp(c->name, p->name) != 0)
			bad = -1;
		else if (o->differs) /* not shown: its sum mixes two meanings */
			o->value = 0;
		else if (c->is_signed) /* a signed sum may go down: its change, in two's complement */
			o->value = c->value - p->value;
		else
			bad |= sub(c->value, p->value, &o->value);
	}
	if (bad)
		snprintf(why, n, "a counter went backwards (a segment replaced)");
	return bad ? -1 : 0;
}

/* The bucket quantile q falls in, shown by its bounds: "<=250ms", or
 * ">10s" past the last bound, "-" without observations. */
static void quantile(const top_sample_t *s, const top_handler_t *h, double q, char *out, size_t n)
{
	uint64_t total = 0, seen = 0;
	for (size_t b = 0; b <= s->nbounds; b++)
		total += h->buckets[b];
	if (total == 0 || s->nbounds == 0) {
		snprintf(out, n, "-");
		return;
	}
	double rank = q * (double)total;
	size_t b = 0;
	for (; b < s->nbounds; b++) {
		seen += h->buckets[b];
		if ((double)seen >= rank)
			break;
	}
	const char *le = s->le[b < s->nbounds ? b : s->nbounds - 1];
	double ms = strtod(le, NULL) * 1000.0;
	snprintf(out, n, "%s%gms", b < s->nbounds ? "<=" : ">", ms);
}

/* Seconds to the millisecond shown: the rates are computed from the
 * interval as printed, so a script can check them. */
static double shown_seconds(double seconds)
{
	return (double)(long long)(seconds * 1000.0 + 0.5) / 1000.0;
}

static double rate(uint64_t n, double seconds)
{
	return seconds > 0 ? (double)n / seconds : 0;
}

/* A metric's change in the interval and per second, in its unit: fires
 * and observations as counted, a sum divided as the exporter serves it. */
static void metric_figures(const top_metric_t *m, double seconds, char *out, size_t n)
{
	double divide = m->divide[0] ? strtod(m->divide, NULL) : 1;
	double v = m->is_signed ? (double)(int64_t)m->value : (double)m->value;
	if (m->differs)
		snprintf(out, n, "- - (the segments describe it otherwise: not summed)");
	else if ((!m->divide[0] || divide == 1) && m->is_signed)
		snprintf(out, n, "%lld %.2f/s", (long long)(int64_t)m->value, seconds > 0 ? v / seconds : 0);
	else if (!m->divide[0] || divide == 1)
		snprintf(out, n, "%llu %.2f/s", (unsigned long long)m->value, seconds > 0 ? v / seconds : 0);
	else
		snprintf(out, n, "%.9g %.4g/s", v / divide, seconds > 0 ? v / divide / seconds : 0);
}

/* A handler's slow requests in the interval and per second: "- -"
 * without durations (requests the service does not time are not judged),
 * "unknown -" when a row's threshold cannot be told (top_sample.c). */
static void slow_figures(const top_sample_t *s, const top_handler_t *h, double seconds, char *out, size_t n)
{
	uint64_t observed = 0;
	for (size_t b = 0; b <= s->nbounds; b++)
		observed += h->buckets[b];
	if (h->slow_unknown)
		snprintf(out, n, "unknown -");
	else if (observed == 0 || s->nbounds == 0)
		snprintf(out, n, "- -");
	else
		snprintf(out, n, "%lu %.2f", (unsigned long)h->slow, rate(h->slow, seconds));
}

/* One interval's figures; eol is "\n" or, on a raw terminal, "\r\n"
 * after clearing the rest of the line. */
static void show(FILE *out, const top_delta_t *x, const char *eol)
{
	const top_sample_t *d = &x->d;
	fprintf(out, "interval %.3f s; counts in the interval, then per second%s", x->seconds, eol);
	fprintf(out, "invoices %lu %.2f/s%s", (unsigned long)d->invoices, rate(d->invoices, x->seconds), eol);
	fprintf(out, "payments %lu %.2f/s approved ", (unsigned long)d->payments, rate(d->payments, x->seconds));
	if (d->payments == 0)
		fprintf(out, "-");
	else if (d->outcome_unknown)
		fprintf(out, "unknown (%lu payments' outcome not recorded)", (unsigned long)d->outcome_unknown);
	else
		fprintf(out, "%.1f%%", 100.0 * (double)d->approved / (double)d->payments);
	fprintf(out, "%s", eol);
	fprintf(out, "refunds %lu %.2f/s%s", (unsigned long)d->refunds, rate(d->refunds, x->seconds), eol);
	fprintf(out, "errors %lu %.2f/s%s", (unsigned long)d->errors, rate(d->errors, x->seconds), eol);
	fprintf(out, "handler requests req/s slow slow/s p50 p95 p99 (slow: over the handler's threshold; percentiles: "
	             "the duration bucket they fall in)%s",
	        eol);
	for (size_t h = 0; h < d->nhandlers; h++) {
		const top_handler_t *th = &d->handlers[h];
		char p50[32], p95[32], p99[32], slow[64];
		quantile(d, th, 0.50, p50, sizeof p50);
		quantile(d, th, 0.95, p95, sizeof p95);
		quantile(d, th, 0.99, p99, sizeof p99);
		slow_figures(d, th, x->seconds, slow, sizeof slow);
		pr_put_escaped(out, th->name);
		fprintf(out, " %lu %.2f %s %s %s %s%s", (unsigned long)th->requests, rate(th->requests, x->seconds), slow, p50,
		        p95, p99, eol);
	}
	if (d->nmetrics)
		fprintf(out, "metric change change/s (the segments' other metrics: fires, a sum in its unit, a "
		             "histogram's observations)%s",
		        eol);
	for (size_t m = 0; m < d->nmetrics; m++) {
		char fig[96];
		metric_figures(&d->metrics[m], x->seconds, fig, sizeof fig);
		pr_put_escaped(out, d->metrics[m].name);
		fprintf(out, " %s%s", fig, eol);
	}
}

/* "PID" or "DIR", for messages. */
static void target_name(const top_target_t *t, char *buf, size_t n)
{
	if (t->pid >= 0)
		snprintf(buf, n, "process %d", (int)t->pid);
	else
		snprintf(buf, n, "%s", t->dir);
}

/* "skipped NAME: why" of a reading's left-out files, one per line (the
 * caller escapes each: they name other users' files), then "and N more". */
static void skipped_lines(const top_sample_t *s, void (*line)(const char *text, void *ctx), void *ctx)
{
	char buf[TOP_SKIPPED_BYTES + 64];
	for (size_t i = 0; i < s->nskipped && i < TOP_SKIPPED_KEPT; i++) {
		snprintf(buf, sizeof buf, "skipped %s", s->skipped[i]);
		line(buf, ctx);
	}
	if (s->nskipped > TOP_SKIPPED_KEPT) {
		snprintf(buf, sizeof buf, "skipped %zu more files that are not the user's segments",
		         s->nskipped - TOP_SKIPPED_KEPT);
		line(buf, ctx);
	}
}

static void skipped_to_stderr(const char *text, void *name)
{
	bp_error(name, text);
}

static int run_once(const top_target_t *t, double interval)
{
	static top_sample_t first, second;
	static top_delta_t x;
	char err[1024], name[4200];
	target_name(t, name, sizeof name);
	int rc = top_sample_read(t, &first, err, sizeof err);
	double t0 = now_s();
	if (rc == 0 && top_sample_no_writer(t, &first, err, sizeof err))
		rc = -1;
	if (rc == 0)
		skipped_lines(&first, skipped_to_stderr, name);
	if (rc == 0) {
		pr_printf_escaped(stdout, "# %s: first reading taken; the next in %g s", name, interval);
		printf("\n");
		fflush(stdout);
		struct timespec ts = { (time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9) };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		rc = top_sample_read(t, &second, err, sizeof err);
	}
	x.seconds = shown_seconds(now_s() - t0);
	if (rc == 1) {
		bp_error(name, "the process exited: no figures for this interval");
		top_sample_free(&first);
		top_sample_free(&second);
		return BP_EXIT_FAIL;
	}
	if (rc == 0 && delta(&first, &second, &x.d, err, sizeof err) != 0)
		rc = -1;
	if (rc == 0)
		show(stdout, &x, "\n");
	else
		bp_error(name, err);
	top_sample_free(&first);
	top_sample_free(&second);
	top_sample_free(&x.d);
	return rc == 0 ? BP_EXIT_OK : BP_EXIT_ERROR;
}

static volatile sig_atomic_t stop_asked;

static void on_signal(int sig)
{
	(void)sig;
	stop_asked = 1;
}

static struct termios saved_tty;

static void screen_enter(void)
{
	struct termios raw = saved_tty;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
	fputs("\033[?1049h\033[?25l", stdout); /* the alternate screen, no cursor */
}

static void screen_leave(void)
{
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
}

/* Wait up to ms for a key: its byte, 0 for none, -1 on a signal or EOF. */
static int key_within(int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	int r = poll(&p, 1, ms);
	if (r < 0)
		return errno == EINTR ? -1 : 0;
	if (r == 0)
		return 0;
	unsigned char c;
	return read(STDIN_FILENO, &c, 1) == 1 ? c : -1;
}

static void skipped_to_screen(const char *text, void *unused)
{
	(void)unused;
	pr_put_escaped(stdout, text);
	fputs("\r\n", stdout);
}

/* The screen: our words and the figures, every foreign byte (the state
 * names files and says why a reading failed) through the escaper. */
static void draw(const char *name, const char *state, const top_sample_t *last, const top_delta_t *x, int have)
{
	fputs("\033[H\033[J", stdout);
	fputs("billing-probes top: ", stdout);
	pr_put_escaped(stdout, name);
	fputs("  [p/space pause, q quit]\r\n", stdout);
	pr_put_escaped(stdout, state);
	fputs("\r\n", stdout);
	skipped_lines(last, skipped_to_screen, NULL);
	if (have)
		show(stdout, x, "\r\n");
	fflush(stdout);
}

static int run_live(const top_target_t *t, double interval)
{
	static top_sample_t prev, cur;
	static top_delta_t x;
	char err[1024], name[4200], state[1200];
	int paused = 0, have = 0, gone = 0;
	target_name(t, name, sizeof name);
	if (tcgetattr(STDIN_FILENO, &saved_tty) != 0) {
		bp_error("top", "standard input is not a terminal: use --once for scripts");
		return BP_EXIT_ERROR;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	screen_enter();
	int base = top_sample_read(t, &prev, err, sizeof err);
	double t0 = now_s();
	gone = base == 1;
	if (base == 0)
		snprintf(state, sizeof state, "first interval under way");
	else
		snprintf(state, sizeof state, "%s", gone ? "GONE: the process exited" : err);
	draw(name, state, &prev, &x, 0);
	while (!stop_asked) {
		double left = t0 + interval - now_s();
		int wait_ms = left > 0 ? (int)(left * 1000) + 1 : 0;
		int key = key_within(paused || gone ? 1000 : wait_ms);
		if (key < 0 || key == 'q' || key == 'Q')
			break;
		if (key == 'p' || key == ' ') {
			paused = !paused;
			if (!paused) { /* a fresh interval: the pause is not in anyone's rate */
				base = top_sample_read(t, &prev, err, sizeof err);
				t0 = now_s();
			}
			snprintf(state, sizeof state, "%s", paused ? "PAUSED (p or space resumes)" : "resumed: interval restarted");
			draw(name, state, &prev, &x, have);
			continue;
		}
		if (paused || gone || now_s() < t0 + interval)
			continue;
		int r = top_sample_read(t, &cur, err, sizeof err);
		x.seconds = shown_seconds(now_s() - t0);
		if (r == 1) {
			gone = 1;
			have = 0;
			snprintf(state, sizeof state, "GONE: the process exited; no figures");
		} else if (r == 0 && top_sample_no_writer(t, &cur, err, sizeof err)) {
			/* the service stopped, or its segments were removed: said, and
			 * watched until a writer is back */
			have = 0;
			snprintf(state, sizeof state, "NO WRITER: %s; waiting for one", err);
		} else if (r != 0 || base != 0 || delta(&prev, &cur, &x.d, err, sizeof err) != 0) {
			have = 0;
			snprintf(state, sizeof state, "no figures: %s; interval restarted",
			         r == 0 && base != 0 ? "no first reading" : err);
		} else {
			have = 1;
			snprintf(state, sizeof state, "live");
		}
		top_sample_t was = prev; /* the reading just taken is the next one's start */
		prev = cur;
		cur = was;
		base = r;
		t0 = now_s();
		draw(name, state, &prev, &x, have);
	}
	screen_leave();
	top_sample_free(&prev);
	top_sample_free(&cur);
	top_sample_free(&x.d);
	return BP_EXIT_OK;
}

int bp_cmd_top(const bp_options_t *opt)
{
	top_target_t t;
	char err[1024];
	double interval = opt->interval > 0 ? opt->interval : BP_TOP_INTERVAL_S;
	if ((opt->target_count > 0) == (opt->stats_dir != NULL))
		return bp_usage_error("top: give a PID or --stats-dir DIR (one of them)");
	if (top_target_open(&t, opt->target_count ? opt->targets[0] : NULL, opt->stats_dir, err, sizeof err) != 0) {
		bp_error(opt->target_count ? opt->targets[0] : opt->stats_dir, err);
		return BP_EXIT_ERROR;
	}
	return opt->once ? run_once(&t, interval) : run_live(&t, interval);
}
