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

#include "cgroup_filter.h"
#include "command_line.h"
#include "exporter.h"
#include "format.h"
#include "http.h"
#include "option_table.h"
#include "metric_check.h"
#include "stats_source.h"
#include "target_overlap.h"

static int parse_pid(const char *s, int *pid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v <= 0 || v > 0x7fffffffL)
		return -1;
	*pid = (int)v;
	return 0;
}

/* The tables the command line asks for instead of a run: BX_EXIT_OK or
 * BX_EXIT_FAIL. */
static int print_table(const bx_opts_t *o)
{
	char err[256];
	if (o->print_metric_table) {
		bp_buf_t b = { 0 };
		bx_format_metric_table(&b);
		fputs(b.data ? b.data : "", stdout);
		free(b.data);
		return b.failed ? BX_EXIT_FAIL : BX_EXIT_OK;
	}
	if (bx_metric_table_check(err, sizeof err) != 0) {
		bx_error("%s", err);
		return BX_EXIT_FAIL;
	}
	printf("metric table agrees with billing.d (%zu maps, %zu metric entries)\n", bx_map_count, bx_metric_count);
	return BX_EXIT_OK;
}

static int read_targets(const bx_opts_t *o, bx_exporter_t *ex)
{
	char err[512];
	ex->targets = calloc(o->pid_count + o->binary_count, sizeof *ex->targets);
	if (!ex->targets)
		return BX_EXIT_FAIL;
	for (size_t i = 0; i < o->pid_count + o->binary_count; i++) {
		int pid = 0;
		const char *binary = i < o->pid_count ? NULL : o->binaries[i - o->pid_count];
		if (!binary && parse_pid(o->pids[i], &pid) != 0) {
			bx_error("--pid %s: not a process ID", o->pids[i]);
			return BX_EXIT_USAGE;
		}
		if (bx_target_read(&ex->targets[i], pid, binary, ex->only_uid, err, sizeof err) != 0) {
			if (binary)
				bx_error("--binary %s: %s", binary, err);
			else
				bx_error("--pid %d: %s", pid, err);
			return BX_EXIT_USAGE;
		}
		ex->target_count++;
	}
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
		if (bx_web_config_read(o->web_config, web, err, sizeof err) != 0) {
			bx_error("%s", err);
			return BX_EXIT_USAGE;
		}
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
		if (errno == EAGAIN)
			return 0;
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
	ex.stats_fd = -1;
	pthread_mutex_init(&ex.lock, NULL);
	if ((rc = check_web(&o, serve, &web)) != BX_EXIT_OK)
		goto out;
	raise_open_files();
	ex.groups = o.groups;
	ex.verbose = o.verbose;
	ex.only_uid = o.only_uid;
	ex.idle_detach_s = o.idle_detach_s;
	if (o.cgroup) {
		if (bx_cgroup_open(o.cgroup, &cgroup, err, sizeof err) != 0) {
			bx_error("%s", err);
			rc = BX_EXIT_USAGE;
			goto out;
		}
		ex.cgroup = &cgroup;
	}
	if (bx_metric_table_check(err, sizeof err) != 0) {
		bx_error("%s", err);
		rc = BX_EXIT_FAIL;
		goto out;
	}
	/* Stats targets first: a --pid served from its segment needs no BPF. */
	if (bx_stats_setup(&ex, o.source, o.pids, &o.pid_count, o.stats_dirs, o.stats_dir_count, err, sizeof err) !=
	    0) {
		bx_error("%s", err);
		rc = BX_EXIT_USAGE;
		goto out;
	}
	if ((rc = read_targets(&o, &ex)) != BX_EXIT_OK)
		goto out;
	if (bx_targets_check_overlap(&ex, err, sizeof err) != 0) {
		bx_error("%s", err);
		rc = BX_EXIT_USAGE;
		goto out;
	}
	bx_stats_start(&ex);

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
		bx_error("%s", err);
		rc = BX_EXIT_USAGE;
		goto out;
	}
	if (ex.target_count > 0 && (bx_bpf_load(&ex, o.bpf_stats, err, sizeof err) != 0 ||
	                            bx_attach_all(&ex, err, sizeof err) != 0)) {
		bx_error("%s", err);
		rc = BX_EXIT_USAGE;
		goto out;
	}
	/* Only now: an answer from /healthz or /metrics means every attachment
	 * above is live (http.c). */
	if (http && bx_http_serve(http, &ex, &o.limits, &max_connections, err, sizeof err) != 0) {
		bx_error("%s", err);
		rc = BX_EXIT_USAGE;
		goto out;
	}
	size_t groups_text = 0;
	char groups[128] = "";
	for (unsigned g = 1; g & BX_GROUPS_PROBES; g <<= 1)
		if (ex.groups & g)
			groups_text += (size_t)snprintf(groups + groups_text, sizeof groups - groups_text, "%s%s",
			                                groups_text ? "," : "", bx_group_name(g));
	bx_error("%zu probe attachments on %zu target(s), %zu stats target(s), metrics %s", ex.link_count, ex.target_count, bx_stats_target_count(&ex), groups);
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
	bx_bpf_close(&ex);
	bx_stats_free(&ex);
	bx_cgroup_close(&cgroup);
	for (size_t i = 0; i < ex.target_count; i++)
		bx_target_free(&ex.targets[i]);
	free(ex.targets);
	for (size_t i = 0; i < BX_MAX_MAPS; i++)
		for (size_t f = 0; f < BX_MAX_FIELDS; f++)
			bx_label_slot_free(&ex.slots[i][f]);
	return rc;
}
