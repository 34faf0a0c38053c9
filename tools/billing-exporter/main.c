/*
 * billing-exporter -- the billing USDT probes as exact Prometheus metrics.
 *
 *   billing-exporter (--pid PID | --binary PATH)... [--metrics GROUPS]
 *                    [--listen ADDR:PORT] [--web-config FILE] [--once | --interval N]
 *                    [--format table|json]
 *
 * Reads what each target carries (the probe reader, tools/probe-reader), loads
 * the BPF programs of the enabled metric groups, attaches them to every
 * module that carries their probe, and serves /metrics until SIGINT or
 * SIGTERM; or prints snapshots for a terminal.  docs/exporter.md is the
 * manual.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_filter.h"
#include "exporter.h"
#include "format.h"
#include "http.h"
#include "metric_check.h"
#include "stats_source.h"
#include "target_overlap.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: billing-exporter (--pid PID | --binary PATH)... [options]\n"
	        "  --pid PID           every module of process PID that carries billing probes (repeatable)\n"
	        "  --source S          auto (default: a --pid's stats segment when it has one, else USDT), stats or usdt\n"
	        "  --stats-dir DIR     every stats segment in DIR, summed as one service; no root (repeatable); DIR\n"
	        "                      must be root's, --uid's, UID's for billing-stats-UID, or this user's\n"
	        "  --binary PATH       every process, running now or later, that runs or maps PATH (repeatable)\n"
	        "  --uid USER          count only processes (and stats segments) of that user, a name or number\n"
	        "  --cgroup PATH       count only processes (and segments written by processes) in that cgroup v2\n"
	        "                      directory or below it\n"
	        "  --metrics GROUPS    comma list of business,requests,db,gateway or all (default business,requests)\n"
	        "  --listen ADDR:PORT  serve /metrics there (default %s:%d; [IPv6]:PORT; port 0: any free port)\n"
	        "  --web-config FILE   TLS and basic auth, exporter-toolkit's web config YAML (docs/security.md)\n"
	        "  --listen-insecure   allow a non-loopback --listen without TLS (anyone reaching it reads /metrics)\n"
	        "  --web-max-connections N         HTTP clients at once (default %d)\n"
	        "  --web-max-connections-per-ip N  from one remote address or local user (default %d)\n"
	        "  --web-request-timeout N         seconds a request may take (default %d)\n"
	        "  --idle-detach N     detach a --binary program file no process has run for N seconds (default %d)\n"
	        "  --once              print one snapshot after --interval seconds (default 5) and exit\n"
	        "  --interval N        print a snapshot every N seconds\n"
	        "  --format F          snapshot format: table (default) or json (one JSON object per line)\n"
	        "  --bpf-stats         turn on the kernel's BPF run-time statistics while running\n"
	        "  --print-metric-table  print the metric table (markdown) and exit\n"
	        "  --check-table       check the metric table against billing.d's catalogue and exit\n"
	        "  --verbose           show libbpf's messages\n",
	        BX_DEFAULT_ADDRESS, BX_DEFAULT_PORT, BX_DEFAULT_MAX_CONNECTIONS, BX_DEFAULT_MAX_PER_IP,
	        BX_DEFAULT_REQUEST_SECONDS, BX_IDLE_DETACH_S);
}

static int parse_groups(const char *list, unsigned *groups)
{
	char copy[256];
	snprintf(copy, sizeof copy, "%s", list);
	*groups = BX_GROUP_SELF;
	for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned g = strcmp(tok, "all") == 0 ? BX_GROUPS_PROBES : bx_group_by_name(tok);
		if (g == 0 || g == BX_GROUP_SELF) {
			char names[128];
			size_t len = 0;
			for (unsigned each = 1; each & BX_GROUPS_PROBES; each <<= 1)
				len += (size_t)snprintf(names + len, sizeof names - len, "%s, ", bx_group_name(each));
			bx_error("--metrics: unknown group %s (%sall)", tok, names);
			return -1;
		}
		*groups |= g;
	}
	return 0;
}

/* ADDR:PORT, or [IPv6]:PORT; addr gets ADDR without brackets. */
static int parse_listen(const char *s, char *addr, size_t addrlen, int *port)
{
	const char *colon = strrchr(s, ':');
	const char *host = s, *host_end = colon;
	char *end;
	if (s[0] == '[') {
		host = s + 1;
		host_end = strchr(host, ']');
		if (!host_end || host_end[1] != ':')
			return -1;
		colon = host_end + 1;
	}
	if (!colon || host_end == host || (size_t)(host_end - host) >= addrlen)
		return -1;
	long p = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || p < 0 || p > 65535)
		return -1;
	snprintf(addr, addrlen, "%.*s", (int)(host_end - host), host);
	*port = (int)p;
	return 0;
}

static int parse_count(const char *opt, const char *s, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 1 || v > (long)max) {
		bx_error("%s: want a whole number 1..%u, got %s", opt, max, s);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

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

typedef struct opts {
	const char **pids, **binaries, **stats_dirs;
	size_t pid_count, binary_count, stats_dir_count;
	int source; /* BX_SOURCE_*: stats_source.h */
	unsigned groups;
	char addr[64];
	int port, listen_given, once, interval, format, bpf_stats, verbose;
	const char *web_config;
	int listen_insecure;
	long only_uid;
	const char *cgroup;
	bx_http_limits_t limits;
	unsigned idle_detach_s;
} opts_t;

static int parse_args(int argc, char **argv, opts_t *o)
{
	enum { O_PID = 256,
	       O_BINARY,
	       O_METRICS,
	       O_LISTEN,
	       O_ONCE,
	       O_INTERVAL,
	       O_FORMAT,
	       O_STATS,
	       O_TABLE,
	       O_CHECK,
	       O_VERBOSE,
	       O_SOURCE,
	       O_STATS_DIR,
	       O_WEB_CONFIG,
	       O_INSECURE,
	       O_MAX_CONN,
	       O_MAX_PER_IP,
	       O_REQUEST_TIMEOUT,
	       O_UID,
	       O_CGROUP,
	       O_IDLE_DETACH,
	       O_HELP };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, O_PID },
		{ "binary", required_argument, NULL, O_BINARY },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "once", no_argument, NULL, O_ONCE },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "bpf-stats", no_argument, NULL, O_STATS },
		{ "print-metric-table", no_argument, NULL, O_TABLE },
		{ "check-table", no_argument, NULL, O_CHECK },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "source", required_argument, NULL, O_SOURCE },
		{ "stats-dir", required_argument, NULL, O_STATS_DIR },
		{ "uid", required_argument, NULL, O_UID },
		{ "cgroup", required_argument, NULL, O_CGROUP },
		{ "web-config", required_argument, NULL, O_WEB_CONFIG },
		{ "listen-insecure", no_argument, NULL, O_INSECURE },
		{ "web-max-connections", required_argument, NULL, O_MAX_CONN },
		{ "web-max-connections-per-ip", required_argument, NULL, O_MAX_PER_IP },
		{ "web-request-timeout", required_argument, NULL, O_REQUEST_TIMEOUT },
		{ "idle-detach", required_argument, NULL, O_IDLE_DETACH },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char err[256];

	memset(o, 0, sizeof *o);
	o->groups = BX_GROUPS_DEFAULT;
	snprintf(o->addr, sizeof o->addr, "%s", BX_DEFAULT_ADDRESS);
	o->port = BX_DEFAULT_PORT;
	o->format = BX_FMT_TABLE;
	o->only_uid = -1;
	o->limits.max_connections = BX_DEFAULT_MAX_CONNECTIONS;
	o->limits.max_per_ip = BX_DEFAULT_MAX_PER_IP;
	o->limits.request_seconds = BX_DEFAULT_REQUEST_SECONDS;
	o->idle_detach_s = BX_IDLE_DETACH_S;
	o->pids = calloc((size_t)argc, sizeof *o->pids);
	o->binaries = calloc((size_t)argc, sizeof *o->binaries);
	o->stats_dirs = calloc((size_t)argc, sizeof *o->stats_dirs);
	if (!o->pids || !o->binaries || !o->stats_dirs)
		return BX_EXIT_FAIL;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_PID: o->pids[o->pid_count++] = optarg; break;
		case O_BINARY: o->binaries[o->binary_count++] = optarg; break;
		case O_STATS_DIR: o->stats_dirs[o->stats_dir_count++] = optarg; break;
		case O_SOURCE:
			if ((o->source = bx_source_by_name(optarg)) < 0) {
				bx_error("--source: want auto, stats or usdt, got %s", optarg);
				return BX_EXIT_USAGE;
			}
			break;
		case O_METRICS:
			if (parse_groups(optarg, &o->groups) != 0)
				return BX_EXIT_USAGE;
			break;
		case O_LISTEN:
			if (parse_listen(optarg, o->addr, sizeof o->addr, &o->port) != 0) {
				bx_error("--listen: want ADDR:PORT, e.g. 127.0.0.1:%d, got %s", BX_DEFAULT_PORT, optarg);
				return BX_EXIT_USAGE;
			}
			o->listen_given = 1;
			break;
		case O_UID: {
			struct passwd *pw = getpwnam(optarg);
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (pw)
				o->only_uid = (long)pw->pw_uid;
			else if (!errno && !*end && end != optarg && v >= 0 && v < 0xffffffffL)
				o->only_uid = v;
			else {
				bx_error("--uid: %s is neither a user name nor a uid", optarg);
				return BX_EXIT_USAGE;
			}
			break;
		}
		case O_CGROUP: o->cgroup = optarg; break;
		case O_WEB_CONFIG: o->web_config = optarg; break;
		case O_INSECURE: o->listen_insecure = 1; break;
		case O_MAX_CONN:
			if (parse_count("--web-max-connections", optarg, 1000000, &o->limits.max_connections) != 0)
				return BX_EXIT_USAGE;
			break;
		case O_MAX_PER_IP:
			if (parse_count("--web-max-connections-per-ip", optarg, 1000000, &o->limits.max_per_ip) != 0)
				return BX_EXIT_USAGE;
			break;
		case O_REQUEST_TIMEOUT:
			if (parse_count("--web-request-timeout", optarg, 3600, &o->limits.request_seconds) != 0)
				return BX_EXIT_USAGE;
			break;
		case O_IDLE_DETACH:
			if (parse_count("--idle-detach", optarg, 86400, &o->idle_detach_s) != 0)
				return BX_EXIT_USAGE;
			break;
		case O_ONCE: o->once = 1; break;
		case O_INTERVAL: {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 1 || n > 86400) {
				bx_error("--interval: want whole seconds 1..86400, got %s", optarg);
				return BX_EXIT_USAGE;
			}
			o->interval = (int)n;
			break;
		}
		case O_FORMAT:
			if (strcmp(optarg, "table") == 0)
				o->format = BX_FMT_TABLE;
			else if (strcmp(optarg, "json") == 0)
				o->format = BX_FMT_JSON;
			else {
				bx_error("--format: want table or json, got %s", optarg);
				return BX_EXIT_USAGE;
			}
			break;
		case O_STATS: o->bpf_stats = 1; break;
		case O_VERBOSE: o->verbose = 1; break;
		case O_TABLE: {
			bp_buf_t b = { 0 };
			bx_format_metric_table(&b);
			fputs(b.data ? b.data : "", stdout);
			free(b.data);
			exit(b.failed ? BX_EXIT_FAIL : BX_EXIT_OK);
		}
		case O_CHECK:
			if (bx_metric_table_check(err, sizeof err) != 0) {
				bx_error("%s", err);
				exit(BX_EXIT_FAIL);
			}
			printf("metric table agrees with billing.d (%zu maps, %zu metric entries)\n", bx_map_count,
			       bx_metric_count);
			exit(BX_EXIT_OK);
		case O_HELP: usage(stdout); exit(BX_EXIT_OK);
		default:
			bx_error("unknown or incomplete option %s (--help lists them)", argv[optind - 1]);
			return BX_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		bx_error("unexpected argument %s (targets are --pid PID or --binary PATH)", argv[optind]);
		return BX_EXIT_USAGE;
	}
	if (o->pid_count + o->binary_count + o->stats_dir_count == 0) {
		bx_error("no target: give --pid PID, --binary PATH or --stats-dir DIR");
		return BX_EXIT_USAGE;
	}
	if (o->once && o->interval == 0)
		o->interval = 5;
	return BX_EXIT_OK;
}

static int read_targets(const opts_t *o, bx_exporter_t *ex)
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
static int check_web(opts_t *o, int serve, bx_web_config_t *web)
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
	if (serve && !web->cert_pem && !o->listen_insecure && bx_http_is_loopback(o->addr) == 0) {
		bx_error("--listen %s is not a loopback address and there is no TLS: give --web-config with "
		         "tls_server_config (docs/security.md), or --listen-insecure to serve it in clear to anyone",
		         o->addr);
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
	opts_t o;
	bx_exporter_t ex;
	bx_http_t *http = NULL;
	bx_web_config_t web = { 0 };
	bx_cgroup_t cgroup = { .fd = -1 };
	char err[512];
	int rc = parse_args(argc, argv, &o);
	int serve = o.listen_given || o.interval == 0;

	memset(&ex, 0, sizeof ex);
	ex.stats_fd = -1;
	pthread_mutex_init(&ex.lock, NULL);
	if (rc != BX_EXIT_OK)
		goto out;
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
	if (serve && !(http = bx_http_bind(o.addr, o.port, &port, err, sizeof err))) {
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
		bx_error("serving %s://%s%s%s:%d/metrics (%s%u clients at most)", web.cert_pem ? "https" : "http", strchr(o.addr, ':') ? "[" : "", o.addr,
		         strchr(o.addr, ':') ? "]" : "", port, web.user_count ? "basic auth, " : "", max_connections);
	fflush(stderr);

	if (o.once) {
		if (!wait_signal(&set, o.interval))
			print_snapshot(&ex, o.format);
	} else if (o.interval) {
		while (!wait_signal(&set, o.interval))
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
	free((void *)o.pids);
	free((void *)o.binaries);
	free((void *)o.stats_dirs);
	return rc;
}
