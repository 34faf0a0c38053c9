/*
 * top_sample.c -- a target's segments read into top's totals
 * (top_sample.h).
 */
#include "top_sample.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_identity.h"
#include "stats_read.h"
#include "stats_trail.h"
#include "stats_trust.h"

int top_segment_open(const char *dir, const char *name, uid_t user, int how, struct stat *st, char *err,
                     size_t errlen)
{
	char why[256];
	int dfd, fd, skip;
	uid_t owner;
	if (pr_stats_dir_open(dir, (long)user, how, &dfd, &owner, why, sizeof why) != 0) {
		snprintf(err, errlen, "%s: %s", dir, why);
		return -1;
	}
	fd = pr_stats_file_open(dfd, name, user, st, &skip, why, sizeof why);
	close(dfd);
	if (fd < 0)
		snprintf(err, errlen, "%s/%s: %s", dir, name, why);
	return fd;
}

int top_target_find(top_target_t *t, const char *pid_text, const char *dir, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	t->pid = -1;
	if (dir) {
		int fd;
		if (pr_stats_dir_open(dir, pr_stats_dir_user(dir, -1), PR_OWNER_OR_ROOT, &fd, &t->user, err, errlen) !=
		    0)
			return -1;
		close(fd);
		t->dir = dir;
		return 0;
	}
	char *end;
	errno = 0;
	long pid = strtol(pid_text, &end, 10);
	pr_proc_t proc;
	if (errno || *end || end == pid_text || pid <= 0 || pid > INT_MAX) {
		snprintf(err, errlen, "'%s' is not a PID", pid_text);
		return -1;
	}
	if (pr_proc_read((pid_t)pid, &proc) != 0) {
		snprintf(err, errlen, "no process %ld", pid);
		return -1;
	}
	t->pid = proc.pid;
	t->ns_pid = proc.ns_pid;
	t->user = proc.uid;
	t->start_time = proc.start_time;
	if (pr_stats_segment_place(t->pid, t->ns_pid, t->user, &t->place) < 0) {
		snprintf(err, errlen, "process %ld maps no stats segment (not a stats build, or stats are off)", pid);
		return -1;
	}
	return 0;
}

int top_target_open(top_target_t *t, const char *pid_text, const char *dir, char *err, size_t errlen)
{
	if (top_target_find(t, pid_text, dir, err, errlen) != 0)
		return -1;
	/* the first reading checks the file and its writer, or that the
	 * directory holds a running writer's segment */
	top_sample_t *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = top_sample_read(t, s, err, errlen);
	if (rc == 0 && top_sample_no_writer(t, s, err, errlen))
		rc = -1;
	top_sample_free(s);
	free(s);
	if (rc == 1)
		snprintf(err, errlen, "process %d exited", (int)t->pid);
	return rc == 0 ? 0 : -1;
}

int top_no_segment(const top_target_t *t, size_t nsegments, size_t nskipped, const char *first_skipped, char *why,
                   size_t n)
{
	char user[96], first[TOP_SKIPPED_BYTES + 64] = "";
	if (t->pid >= 0 || nsegments)
		return 0;
	pr_user_text(t->user, user, sizeof user);
	if (nskipped)
		snprintf(first, sizeof first, " (%zu file%s here left out: %s%s)", nskipped, nskipped == 1 ? "" : "s",
		         first_skipped, nskipped == 1 ? "" : ", ...");
	snprintf(why, n,
	         "no stats segment of %s here%s: is the service running, with BILLING_STATS_DIR naming this directory?",
	         user, first);
	return 1;
}

int top_sample_no_writer(const top_target_t *t, const top_sample_t *s, char *why, size_t n)
{
	char user[96];
	if (t->pid >= 0 || (s->nsegments && s->nexited < s->nsegments))
		return 0;
	if (!s->nsegments)
		return top_no_segment(t, 0, s->nskipped, s->skipped[0], why, n);
	pr_user_text(t->user, user, sizeof user);
	if (s->nsegments == 1)
		snprintf(why, n, "no service writes here now: the one segment of %s here is of a process that has exited",
		         user);
	else
		snprintf(why, n, "no service writes here now: the %zu segments of %s here are of processes that have exited",
		         s->nsegments, user);
	return 1;
}

static int field_by_name(const bs_lmap_t *m, const char *name)
{
	for (size_t f = 0; f < m->nfields; f++)
		if (strcmp(m->fields[f].name, name) == 0)
			return (int)f;
	return -1;
}

/* Fires of the segment's map fed by probe, over every row (0: no such map). */
static uint64_t fires(const bs_segment_t *seg, const char *probe)
{
	int sm = bs_map_by_probe(seg, probe);
	uint64_t n = 0;
	for (size_t r = 0; sm >= 0 && r < seg->map_rows[sm]; r++)
		n += bs_map_cells(seg, (size_t)sm, r)[0];
	return n;
}

static void add_payments(const bs_segment_t *seg, top_sample_t *s)
{
	int sm = bs_map_by_probe(seg, "payment__auth");
	if (sm < 0)
		return;
	int f = field_by_name(&seg->layout->maps[sm], "result");
	for (size_t r = 0; r < seg->map_rows[sm]; r++) {
		const bs_read_row_t *row = bs_map_row(seg, (size_t)sm, r);
		uint64_t n = bs_map_cells(seg, (size_t)sm, r)[0];
		s->payments += n;
		if (f < 0 || row->state[f] == BS_FIELD_OVERFLOW)
			s->outcome_unknown += n;
		else if (row->ints[f] != 0)
			s->declined += n;
		else
			s->approved += n;
	}
}

/* The bucket whose upper bound is ns: observations in the buckets after
 * it are over ns.  -1 when no bound is ns. */
static int bound_at(const bs_lquantity_t *q, uint64_t ns)
{
	double divide = q->divide ? strtod(q->divide, NULL) : 1;
	for (size_t b = 0; b < q->nbounds; b++)
		if ((uint64_t)(strtod(q->le[b], NULL) * divide + 0.5) == ns)
			return (int)b;
	return -1;
}

/* Whether the "other" row's requests are judged by the default: every
 * handler with a threshold of its own has a row of its own (a handler is
 * folded into "other" only once it has none). */
static int other_by_default(const bs_segment_t *seg, int sm, int f, const bs_slow_thresholds_t *th)
{
	for (size_t i = 0; i < th->n; i++) {
		int own = 0;
		for (size_t r = 0; r < seg->map_rows[sm] && !own; r++) {
			const bs_read_row_t *row = bs_map_row(seg, (size_t)sm, r);
			own = f >= 0 && row->state[f] == BS_FIELD_VALUE && strcmp(row->text[f], th->handler[i].handler) == 0;
		}
		if (!own && th->handler[i].ns != th->default_ns)
			return 0;
	}
	return 1;
}

/* Row's observations over its handler's threshold into h, or h marked
 * unknown: a segment without trails publishes no thresholds, and a folded
 * row's may not be the default.  -1 when the threshold is no bound of the
 * buckets: a writer publishes no such threshold. */
static int add_slow(const bs_segment_t *seg, int sm, int f, const bs_read_row_t *row, const uint64_t *cells,
                    const bs_lquantity_t *q, size_t cell, const bs_slow_thresholds_t *th, top_handler_t *h, char *err,
                    size_t errlen)
{
	int named = f >= 0 && row->state[f] == BS_FIELD_VALUE;
	if (th->default_ns == 0 || (!named && !other_by_default(seg, sm, f, th))) {
		h->slow_unknown = 1;
		return 0;
	}
	uint64_t ns = named ? bs_slow_threshold_of(th, row->text[f]) : th->default_ns;
	int b = bound_at(q, ns);
	if (b < 0) {
		snprintf(err, errlen, "slow threshold %llu ns of handler %s is no bound of its duration buckets",
		         (unsigned long long)ns, named ? row->text[f] : "other");
		return -1;
	}
	for (size_t k = (size_t)b + 1; k <= q->nbounds; k++)
		h->slow += cells[cell + 2 + k];
	return 0;
}

/* items, grown to hold need items of size bytes (the capacity *cap,
 * doubled from first); NULL when out of memory, items left as they were. */
static void *grown(void *items, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap ? *cap : first;
	while (c < need)
		c *= 2;
	if (c == *cap)
		return items;
	void *more = realloc(items, c * size);
	if (more)
		*cap = c;
	return more;
}

/* The handler named name in s, added (at zero) when new; NULL when out of
 * memory. */
static top_handler_t *handler(top_sample_t *s, const char *name)
{
	for (size_t h = 0; h < s->nhandlers; h++)
		if (strcmp(s->handlers[h].name, name) == 0)
			return &s->handlers[h];
	top_handler_t *more = grown(s->handlers, &s->handlers_cap, s->nhandlers + 1, sizeof *more, BS_LABEL_VALUES + 1);
	if (!more)
		return NULL;
	s->handlers = more;
	top_handler_t *h = &s->handlers[s->nhandlers++];
	memset(h, 0, sizeof *h);
	snprintf(h->name, sizeof h->name, "%s", name);
	return h;
}

/* Request-done rows by handler, with their duration buckets and the
 * observations over each handler's threshold (th).  -1 when the
 * segment's buckets differ from another segment's, or out of memory. */
static int add_requests(const bs_segment_t *seg, const bs_slow_thresholds_t *th, top_sample_t *s, char *err,
                        size_t errlen)
{
	int sm = bs_map_by_probe(seg, "request__done");
	if (sm < 0)
		return 0;
	const bs_lmap_t *m = &seg->layout->maps[sm];
	int f = field_by_name(m, "handler");
	const bs_lquantity_t *q = NULL;
	size_t cell = 0;
	for (size_t v = 0; v < m->nvalues && !q; v++)
		if (strcmp(seg->layout->quantities[m->values[v].quantity].name, "duration_ns") == 0) {
			q = &seg->layout->quantities[m->values[v].quantity];
			cell = m->values[v].cell;
		}
	if (q) {
		int same = s->nbounds == 0 || s->nbounds == q->nbounds;
		for (size_t b = 0; same && s->nbounds && b < q->nbounds; b++)
			same = strcmp(s->le[b], q->le[b]) == 0;
		if (!same || q->nbounds > BS_LAYOUT_BOUNDS || cell + 2 + q->nbounds >= BS_CELLS_MAX) {
			snprintf(err, errlen, "segments with different request duration buckets");
			return -1;
		}
		s->nbounds = q->nbounds;
		for (size_t b = 0; b < q->nbounds; b++)
			snprintf(s->le[b], sizeof s->le[b], "%s", q->le[b]);
	}
	for (size_t r = 0; r < seg->map_rows[sm]; r++) {
		const bs_read_row_t *row = bs_map_row(seg, (size_t)sm, r);
		const uint64_t *cells = bs_map_cells(seg, (size_t)sm, r);
		const char *name = f < 0 || row->state[f] != BS_FIELD_VALUE ? "other" : row->text[f];
		top_handler_t *h = handler(s, name);
		if (!h) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		h->requests += cells[0];
		for (size_t b = 0; q && b <= q->nbounds; b++)
			h->buckets[b] += cells[cell + 2 + b];
		if (q && add_slow(seg, sm, f, row, cells, q, cell, th, h, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/* The probes the summary lines show (add_segment): their families are
 * not shown again among the metrics. */
static int in_summary(const char *probe)
{
	static const char *const shown[] = { "invoice__create", "payment__auth", "refund__process", "error",
		                             "request__done" };
	for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
		if (strcmp(shown[i], probe) == 0)
			return 1;
	return 0;
}

/* Whether family i is shown among the metrics: one of the maps that feed
 * its name is of a probe the summary does not show. */
static int shown_family(const bs_layout_t *l, size_t i)
{
	for (size_t k = 0; k < l->nfamilies; k++)
		if (strcmp(l->families[k].name, l->families[i].name) == 0 && !in_summary(l->maps[l->families[k].map].probe))
			return 1;
	return 0;
}

/* The metric named name in s, added (at zero) when new; NULL when out of
 * memory. */
static top_metric_t *metric(top_sample_t *s, const char *name, int *added)
{
	*added = 0;
	for (size_t m = 0; m < s->nmetrics; m++)
		if (strcmp(s->metrics[m].name, name) == 0)
			return &s->metrics[m];
	top_metric_t *more = grown(s->metrics, &s->metrics_cap, s->nmetrics + 1, sizeof *more, 16);
	if (!more)
		return NULL;
	s->metrics = more;
	top_metric_t *m = &s->metrics[s->nmetrics++];
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", name);
	*added = 1;
	return m;
}

/* Family f's value over the rows of its map: fires, a quantity's sum or
 * its observations (the buckets' sum, as the exporter counts them), of
 * the rows its `if` keeps. */
static uint64_t family_value(const bs_segment_t *seg, const bs_lfamily_t *f)
{
	const bs_lmap_t *mi = &seg->layout->maps[f->map];
	size_t cell = f->value < 0 ? 0 : mi->values[f->value].cell;
	size_t nbounds = f->value < 0 ? 0 : seg->layout->quantities[mi->values[f->value].quantity].nbounds;
	uint64_t v = 0;
	if (cell + 2 + nbounds >= BS_CELLS_MAX)
		return 0; /* no description the reader takes says so */
	for (size_t r = 0; r < seg->map_rows[f->map]; r++) {
		const uint64_t *cells = bs_map_cells(seg, f->map, r);
		if (f->where >= 0 && bs_map_row(seg, f->map, r)->ints[f->where] == 0)
			continue;
		if (f->source == BS_SRC_COUNT)
			v += cells[0];
		else if (f->source == BS_SRC_SUM)
			v += cells[cell + 1];
		else
			for (size_t b = 0; b <= nbounds; b++)
				v += cells[cell + 2 + b];
	}
	return v;
}

/* The families of the segment's description that the summary does not
 * show, summed into s by name.  -1 when out of memory. */
static int add_metrics(const bs_segment_t *seg, top_sample_t *s)
{
	const bs_layout_t *l = seg->layout;
	for (size_t i = 0; l && i < l->nfamilies; i++) {
		const bs_lfamily_t *f = &l->families[i];
		if (!shown_family(l, i))
			continue;
		const bs_lquantity_t *q = NULL;
		if (f->value >= 0)
			q = &l->quantities[l->maps[f->map].values[f->value].quantity];
		int is_signed = f->source == BS_SRC_SUM && q && q->is_signed, added;
		const char *divide = f->source == BS_SRC_SUM && q && q->divide ? q->divide : "";
		top_metric_t *m = metric(s, f->name, &added);
		if (!m)
			return -1;
		if (added) {
			m->source = f->source;
			m->is_signed = is_signed;
			snprintf(m->divide, sizeof m->divide, "%s", divide);
		} else if (m->source != f->source || m->is_signed != is_signed || strcmp(m->divide, divide) != 0) {
			m->differs = 1;
		}
		m->value += family_value(seg, f);
	}
	return 0;
}

static int add_segment(const bs_segment_t *seg, const bs_slow_thresholds_t *th, top_sample_t *s, char *err,
                       size_t errlen)
{
	if (s->nsegments == TOP_SEGMENTS) {
		snprintf(err, errlen, "more than %d segments", TOP_SEGMENTS);
		return -1;
	}
	s->segment_ids[s->nsegments++] = ((uint64_t)seg->pid << 32) ^ seg->start_time ^ (seg->generation << 48);
	s->nexited += seg->state == BS_EXITED;
	if (add_metrics(seg, s) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->invoices += fires(seg, "invoice__create");
	s->refunds += fires(seg, "refund__process");
	s->errors += fires(seg, "error");
	add_payments(seg, s);
	return add_requests(seg, th, s, err, errlen);
}

static int read_process(const top_target_t *t, bs_segment_t *seg, top_sample_t *s, char *err, size_t errlen)
{
	char why[512];
	struct stat st;
	pr_proc_t now;
	if (pr_proc_read(t->pid, &now) != 0 || now.start_time != t->start_time)
		return 1;
	const pr_segment_place_t *p = &t->place;
	bs_slow_thresholds_t th;
	int fd = top_segment_open(p->dir, p->name, t->user, PR_OWNER_ONLY, &st, err, errlen);
	if (fd < 0)
		return -1;
	int rc = bs_read_fd(fd, seg, why, sizeof why) != 0 || bs_slow_thresholds_read_fd(fd, &th, why, sizeof why) < 0;
	close(fd);
	if (rc != 0) {
		snprintf(err, errlen, "%s/%s: %s", p->dir, p->name, why);
		return -1;
	}
	if (seg->pid != (uint32_t)t->ns_pid || seg->start_time != t->start_time) {
		snprintf(err, errlen, "%s/%s: written by another process (pid %u, started at %llu), not by %d", p->dir,
		         p->name, (unsigned)seg->pid, (unsigned long long)seg->start_time, (int)t->pid);
		return -1;
	}
	if (seg->state == BS_EXITED)
		return 1;
	return add_segment(seg, &th, s, err, errlen);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file of the directory left out, named in the sample. */
static void skipped(top_sample_t *s, const char *name, const char *why)
{
	/* a name that long is cut: the line still says a file was left out */
	if (s->nskipped < TOP_SKIPPED_KEPT && snprintf(s->skipped[s->nskipped], sizeof s->skipped[0], "%s: %s", name, why) < 0)
		s->skipped[s->nskipped][0] = '\0';
	s->nskipped++;
}

static int read_dir(const top_target_t *t, bs_segment_t *seg, top_sample_t *s, char *err, size_t errlen)
{
	char *names[TOP_SEGMENTS], why[512];
	size_t n = 0;
	int rc = 0, dfd, bad;
	uid_t owner;
	if (pr_stats_dir_open(t->dir, (long)t->user, PR_OWNER_OR_ROOT, &dfd, &owner, why, sizeof why) != 0) {
		snprintf(err, errlen, "%s: %s", t->dir, why);
		return -1;
	}
	int listed = dup(dfd);
	DIR *d = listed >= 0 ? fdopendir(listed) : NULL;
	if (!d) {
		snprintf(err, errlen, "%s: %s", t->dir, strerror(errno));
		if (listed >= 0)
			close(listed);
		close(dfd);
		return -1;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL && rc == 0;) {
		size_t len = strlen(e->d_name);
		if (len < 7 || strcmp(e->d_name + len - 6, ".stats") != 0)
			continue;
		if (n == TOP_SEGMENTS || !(names[n] = strdup(e->d_name))) {
			snprintf(err, errlen, "%s: more than %d segments", t->dir, TOP_SEGMENTS);
			rc = -1;
		} else
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof names[0], by_name);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct stat st;
		/* the directory opened once: every file is checked in the one
		 * that was checked; one that is not the user's is not read */
		int fd = pr_stats_file_open(dfd, names[i], t->user, &st, &bad, why, sizeof why);
		if (fd < 0) {
			if (errno != ENOENT)
				skipped(s, names[i], why);
			continue;
		}
		bs_slow_thresholds_t th;
		if (bs_read_fd(fd, seg, why, sizeof why) != 0 || bs_slow_thresholds_read_fd(fd, &th, why, sizeof why) < 0) {
			snprintf(err, errlen, "%s/%s: %s", t->dir, names[i], why);
			rc = -1;
		} else
			rc = add_segment(seg, &th, s, err, errlen);
		close(fd);
	}
	close(dfd);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	return rc;
}

int top_sample_read(const top_target_t *t, top_sample_t *s, char *err, size_t errlen)
{
	bs_segment_t seg;
	top_handler_t *handlers = s->handlers;
	top_metric_t *metrics = s->metrics;
	size_t cap = s->handlers_cap, mcap = s->metrics_cap;
	memset(&seg, 0, sizeof seg);
	memset(s, 0, sizeof *s);
	s->handlers = handlers; /* kept for this reading's */
	s->handlers_cap = cap;
	s->metrics = metrics;
	s->metrics_cap = mcap;
	int rc = t->pid >= 0 ? read_process(t, &seg, s, err, errlen) : read_dir(t, &seg, s, err, errlen);
	bs_segment_free(&seg);
	return rc;
}

int top_sample_copy(top_sample_t *dst, const top_sample_t *src)
{
	top_handler_t *handlers = grown(dst->handlers, &dst->handlers_cap, src->nhandlers, sizeof *handlers, 1);
	if (handlers)
		dst->handlers = handlers;
	top_metric_t *metrics = grown(dst->metrics, &dst->metrics_cap, src->nmetrics, sizeof *metrics, 1);
	if (metrics)
		dst->metrics = metrics;
	if (!handlers || !metrics)
		return -1;
	size_t cap = dst->handlers_cap, mcap = dst->metrics_cap;
	*dst = *src;
	dst->handlers = handlers;
	dst->handlers_cap = cap;
	dst->metrics = metrics;
	dst->metrics_cap = mcap;
	if (src->nhandlers)
		memcpy(dst->handlers, src->handlers, src->nhandlers * sizeof *dst->handlers);
	if (src->nmetrics)
		memcpy(dst->metrics, src->metrics, src->nmetrics * sizeof *dst->metrics);
	return 0;
}

void top_sample_free(top_sample_t *s)
{
	free(s->handlers);
	free(s->metrics);
	s->handlers = NULL;
	s->metrics = NULL;
	s->nhandlers = s->handlers_cap = s->nmetrics = s->metrics_cap = 0;
}
