/*
 * billing-exporter -- the billing USDT probes as exact Prometheus metrics.
 *
 *   billing-exporter (--pid PID | --binary PATH | --stats-dir DIR)... [options]
 *
 * Reads what each target carries (the probe reader, tools/probe-reader), loads
 * the BPF programs of the enabled metric groups, attaches them to every
 * module that carries their probe, and serves /metrics until SIGINT or
 * SIGTERM; or prints snapshots for a terminal.  The options: command_line.c;
 * docs/exporter.md is the manual.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "command_line.h"
#include "exporter.h"
#include "format.h"
#include "http.h"
#include "metric_table.h"
#include "option_table.h"
#include "report.h"
#include "self_metrics.h"

/* Exit codes: clean / runtime failure / bad input or environment. */
enum { BX_EXIT_OK = 0,
       BX_EXIT_FAIL = 1,
       BX_EXIT_USAGE = 2 };

/* err on stderr; returns rc. */
static int said(const char *err, int rc)
{
	bx_error("%s", err);
	return rc;
}

/* One row of the metric table (docs/exporter.md between its markers). */
static void print_row(const bx_metric_t *m)
{
	printf("| `%s` | %s | %s | ", m->name, bx_metric_type_name(m->type), *m->unit ? m->unit : "-");
	if (m->source == BX_SRC_SELF)
		printf("%s", *m->self_labels ? m->self_labels : "-");
	for (size_t l = 0; l < m->nlabels; l++) {
		printf("%s%s", l ? ", " : "", m->labels[l].name);
		if (m->labels[l].decode == BX_DEC_CONSTANT)
			printf("=\"%s\"", m->labels[l].constant);
	}
	printf("%s | %s | %s | %s |\n", m->type == BX_HISTOGRAM ? ", le" : "", bx_group_name(bx_metric_group(m)),
	       m->map < 0 ? "-" : bx_maps[m->map].probe, m->help);
}

/* The tables the command line asks for instead of a run: BX_EXIT_OK or
 * BX_EXIT_FAIL. */
static int print_table(const bx_opts_t *o)
{
	char err[256];
	if (o->print_metric_table) {
		printf("| metric | type | unit | labels | group | probe | help |\n|---|---|---|---|---|---|---|\n");
		for (size_t i = 0; i < bx_metric_count; i++)
			print_row(&bx_metrics[i]);
		for (size_t i = 0; i < bx_self_metric_count; i++)
			print_row(&bx_self_metrics[i].metric);
		return fflush(stdout) == 0 && !ferror(stdout) ? BX_EXIT_OK : BX_EXIT_FAIL;
	}
	if (bx_metric_table_check(err, sizeof err) != 0)
		return said(err, BX_EXIT_FAIL);
	printf("metric table agrees with billing.d (%zu maps, %zu metric entries)\n", bx_map_count,
	       bx_metric_count + bx_self_metric_count);
	return BX_EXIT_OK;
}

/* Descriptors are what a server with thousands of clients and an
 * exporter with thousands of uprobe links run out of first. */
static void raise_open_files(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The web config read, and a listening address that would expose
 * /metrics in clear refused unless --listen-insecure says so. */
static int check_web(bx_opts_t *o, int serve, bx_web_config_t *web)
{
	char err[512];
	if (o->web_config && !serve) {
		bx_error("--web-config is for the HTTP server: add --listen ADDR:PORT to serve with --once or --interval");
		return BX_EXIT_USAGE;
	}
	if (o->web_config) {
		if (bx_web_config_read(o->web_config, web, err, sizeof err) != 0)
			return said(err, BX_EXIT_USAGE);
		o->limits.web = web;
	}
	if (serve && !web->cert_pem && !o->listen_insecure && bx_http_is_loopback(o->listen.addr) == 0) {
		bx_error("--listen %s is not a loopback address and there is no TLS: give --web-config with "
		         "tls_server_config (docs/security.md), or --listen-insecure to serve it in clear to anyone",
		         o->listen.addr);
		return BX_EXIT_USAGE;
	}
	return BX_EXIT_OK;
}

static void print_snapshot(bx_exporter_t *ex, int format)
{
	size_t len = 0;
	char *text = bx_render(ex, format, &len);
	if (!text) {
		bx_error("out of memory while taking a snapshot");
		return;
	}
	fwrite(text, 1, len, stdout);
	if (format == BX_FMT_TABLE)
		fputc('\n', stdout);
	fflush(stdout);
	free(text);
}

/* Wait for SIGINT/SIGTERM up to `seconds`; 1 when one came. */
static int wait_signal(const sigset_t *set, int seconds)
{
	struct timespec ts = { seconds, 0 };
	for (;;) {
		int s = sigtimedwait(set, NULL, &ts);
		if (s > 0)
			return 1;
		if (errno != EINTR)
			return 0;
	}
}

int main(int argc, char **argv)
{
	static bx_opts_t o;
	bx_exporter_t ex;
	bx_http_t *http = NULL;
	bx_web_config_t web = { 0 };
	bx_cgroup_t cgroup = { .fd = -1 };
	char err[512];
	int parsed = bx_command_line_parse(&o, argc, argv);
	int serve = o.listen_given || o.interval == 0;
	int rc = BX_EXIT_OK;

	if (parsed != OPT_RUN)
		return parsed == OPT_REFUSED ? BX_EXIT_USAGE : BX_EXIT_OK;
	if (o.print_metric_table || o.check_table)
		return print_table(&o);
	memset(&ex, 0, sizeof ex);
	pthread_mutex_init(&ex.lock, NULL);
	ex.usdt = (bx_usdt_t){ .groups = o.groups, .targets = &ex.targets, .only_uid = o.only_uid, .idle_detach_s = o.idle_detach_s, .verbose = o.verbose, .lock = &ex.lock, .stats_fd = -1 };
	ex.groups = o.groups;
	if ((rc = check_web(&o, serve, &web)) != BX_EXIT_OK)
		goto out;
	raise_open_files();
	if (o.cgroup) {
		if (bx_cgroup_open(o.cgroup, &cgroup, err, sizeof err) != 0) {
			rc = said(err, BX_EXIT_USAGE);
			goto out;
		}
		ex.usdt.cgroup = &cgroup;
	}
	if (bx_metric_table_check(err, sizeof err) != 0) {
		rc = said(err, BX_EXIT_FAIL);
		goto out;
	}
	/* Stats targets first: a --pid served from its segment needs no BPF. */
	bx_stats_scope_t scope = { o.only_uid, ex.usdt.cgroup, &ex.targets };
	if (bx_stats_setup(&ex.stats, &scope, o.source, o.pids, &o.pid_count, o.stats_dirs, o.stats_dir_count, err,
	                   sizeof err) != 0) {
		rc = said(err, BX_EXIT_USAGE);
		goto out;
	}
	ex.exemplars = bx_stats_exemplars(ex.stats);
	if (bx_targets_read(&ex.targets, o.pids, o.pid_count, o.binaries, o.binary_count, o.only_uid) != 0) {
		rc = BX_EXIT_USAGE;
		goto out;
	}
	if (bx_targets_check_overlap(&ex.targets, err, sizeof err) != 0 ||
	    bx_stats_check_overlap(ex.stats, err, sizeof err) != 0) {
		rc = said(err, BX_EXIT_USAGE);
		goto out;
	}
	bx_stats_start(ex.stats);

	/* Signals go to sigtimedwait in this thread, never to the HTTP thread. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	int port = 0;
	unsigned max_connections = 0;
	if (serve && !(http = bx_http_bind(o.listen.addr, o.listen.port, &port, err, sizeof err))) {
		rc = said(err, BX_EXIT_USAGE);
		goto out;
	}
	if (ex.targets.count > 0 && (bx_bpf_load(&ex.usdt, o.bpf_stats, err, sizeof err) != 0 ||
	                             bx_attach_all(&ex.usdt, bx_stats_target_count(ex.stats) > 0, err, sizeof err) != 0)) {
		rc = said(err, BX_EXIT_USAGE);
		goto out;
	}
	/* Only now: an answer from /healthz or /metrics means every attachment
	 * above is live (http.c). */
	if (http && bx_http_serve(http, &ex, &o.limits, &max_connections, err, sizeof err) != 0) {
		rc = said(err, BX_EXIT_USAGE);
		goto out;
	}
	char groups[128];
	bx_error("%zu probe attachments on %zu target(s), %zu stats target(s), metrics %s", ex.usdt.link_count,
	         ex.targets.count, bx_stats_target_count(ex.stats), bx_group_names(ex.groups, ",", groups, sizeof groups));
	if (http)
		bx_error("serving %s://%s%s%s:%d/metrics (%s%u clients at most)", web.cert_pem ? "https" : "http", strchr(o.listen.addr, ':') ? "[" : "", o.listen.addr,
		         strchr(o.listen.addr, ':') ? "]" : "", port, web.user_count ? "basic auth, " : "", max_connections);
	fflush(stderr);

	if (o.once) {
		if (!wait_signal(&set, (int)o.interval))
			print_snapshot(&ex, o.format);
	} else if (o.interval) {
		while (!wait_signal(&set, (int)o.interval))
			print_snapshot(&ex, o.format);
	} else {
		while (!wait_signal(&set, 3600))
			;
	}
	rc = BX_EXIT_OK;
out:
	bx_http_stop(http);
	bx_web_config_free(&web);
	bx_bpf_close(&ex.usdt);
	bx_stats_free(ex.stats);
	bx_cgroup_close(&cgroup);
	bx_targets_free(&ex.targets);
	for (size_t i = 0; i < BX_MAP_COUNT; i++)
		for (size_t f = 0; f < BX_MAX_FIELDS; f++)
			bx_label_slot_free(&ex.slots[i][f]);
	return rc;
}
