/*
 * command_line.c -- billing-exporter's option table: each option written
 * once, with its --help line and its docs/exporter.md row.
 */
#include "command_line.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "metric_table.h"
#include "option_table.h"
#include "program_files.h"
#include "report.h"
#include "stats_source.h"

static int parse_source(const char *text, void *out, char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	return (*(int *)out = bx_source_by_name(text)) < 0 ? -1 : 0;
}

static int parse_groups(const char *list, void *out, char *why, size_t whylen)
{
	char copy[256], names[128];
	unsigned *groups = out;
	if (strlen(list) >= sizeof copy) {
		snprintf(why, whylen, "too long a list");
		return -1;
	}
	snprintf(copy, sizeof copy, "%s", list);
	*groups = BX_GROUP_SELF;
	for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned g = strcmp(tok, "all") == 0 ? BX_GROUPS_PROBES : bx_group_by_name(tok);
		if (g == 0 || g == BX_GROUP_SELF) {
			snprintf(why, whylen, "unknown group %s (%s, all)", tok,
			         bx_group_names(BX_GROUPS_PROBES, ", ", names, sizeof names));
			return -1;
		}
		*groups |= g;
	}
	return 0;
}

/* ADDR:PORT, or [IPv6]:PORT; the address without brackets. */
static int parse_listen(const char *s, void *out, char *why, size_t whylen)
{
	bx_listen_t *l = out;
	const char *colon = strrchr(s, ':');
	const char *host = s, *host_end = colon;
	char *end;
	(void)why;
	(void)whylen;
	if (s[0] == '[') {
		host = s + 1;
		host_end = strchr(host, ']');
		if (!host_end || host_end[1] != ':')
			return -1;
		colon = host_end + 1;
	}
	if (!colon || host_end == host || (size_t)(host_end - host) >= sizeof l->addr)
		return -1;
	long p = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || p < 0 || p > 65535)
		return -1;
	snprintf(l->addr, sizeof l->addr, "%.*s", (int)(host_end - host), host);
	l->port = (int)p;
	return 0;
}

static int parse_uid(const char *text, void *out, char *why, size_t whylen)
{
	struct passwd *pw = getpwnam(text);
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (pw)
		*(long *)out = (long)pw->pw_uid;
	else if (!errno && !*end && end != text && v >= 0 && v < 0xffffffffL)
		*(long *)out = v;
	else {
		snprintf(why, whylen, "%s is neither a user name nor a uid", text);
		return -1;
	}
	return 0;
}

static int parse_format(const char *text, void *out, char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	if (strcmp(text, "table") == 0)
		*(int *)out = BX_FMT_TABLE;
	else if (strcmp(text, "json") == 0)
		*(int *)out = BX_FMT_JSON;
	else
		return -1;
	return 0;
}

/* Each line through bx_error: its text is escaped for the terminal. */
static void say_escaped(const opt_table_t *t, const char *line)
{
	(void)t;
	bx_error("%s", line);
}

/* What the command line sets; the table's values go here. */
static bx_opts_t opts;
/* The groups, for --metrics' help and default: from billing.d. */
static char groups_help[192], groups_default[96];

static void describe_groups(void)
{
	char names[128];
	snprintf(groups_help, sizeof groups_help, "comma list of %s, or all",
	         bx_group_names(BX_GROUPS_PROBES, ", ", names, sizeof names));
	bx_group_names(BX_GROUPS_DEFAULT, ",", groups_default, sizeof groups_default);
}

static const opt_option_t exporter_options[] = {
	{ "pid", "PID", OPT_LIST, opts.pids, .most = BX_MAX_TARGET_ARGS, .count = &opts.pid_count,
	  .wants = "a process ID",
	  .help = "every module of process PID that carries billing probes (repeatable)",
	  .doc = "every module PID maps that carries billing probes (the executable and e.g. "
	         "`libbillingprobes.so`), each probe in each module; repeatable" },
	{ "source", "S", OPT_PARSED, &opts.source, .parse = parse_source, .init = "auto",
	  .wants = "auto, stats or usdt",
	  .help = "auto (a --pid's stats segment when it has one, else USDT), stats or usdt",
	  .doc = "for `--pid`: `auto` reads the process's stats segment when it has one, else attaches "
	         "USDT; `stats` requires a segment; `usdt` never looks" },
	{ "stats-dir", "DIR", OPT_LIST, opts.stats_dirs, .most = BX_MAX_TARGET_ARGS,
	  .count = &opts.stats_dir_count, .wants = "a directory",
	  .help = "every stats segment in DIR, summed as one service; no root (repeatable); DIR\n"
	          "must be root's, --uid's, UID's for billing-stats-UID, or this user's",
	  .doc = "every stats segment in DIR (a `-Dstats=enabled` service's processes), summed as one "
	         "target; no BPF, no root: read access to the segments is enough, and DIR and each "
	         "segment must belong to their writers' user and be writable by nobody else "
	         "([security.md](security.md), [stats.md](stats.md)); a DIR not there yet is waited for (one "
	         "line says so) and checked when it appears, with no figure until then; repeatable" },
	{ "binary", "PATH", OPT_LIST, opts.binaries, .most = BX_MAX_TARGET_ARGS, .count = &opts.binary_count,
	  .wants = "a path",
	  .help = "every process, running now or later, that runs or maps PATH (repeatable)",
	  .doc = "a program: every process, running now or started later, in any mount namespace, "
	         "whose executable is PATH inside its own root (`/app/billingd` as a container sees "
	         "it), with the probes of PATH **and of the libraries it loads** "
	         "(`libbillingprobes.so`'s timing helpers), counted in those processes only ([What "
	         "`--binary` counts](#what---binary-counts)); so a restarted service, a new worker or "
	         "a restarted container is counted without restarting the exporter "
	         "([Containers](#containers)). A shared library: every process that maps it. "
	         "Repeatable" },
	{ "uid", "USER", OPT_PARSED, &opts.only_uid, .parse = parse_uid,
	  .help = "count only processes (and stats segments) of that user, a name or number",
	  .doc = "count only the fires of processes running as USER (a name or a number; the uid as "
	         "the host sees it, checked in the BPF programs at each fire) and read only segments "
	         "USER owns: another user running a copy of the binary, or dropping a segment into a "
	         "shared directory, adds nothing ([security.md](security.md#billing-exporter))" },
	{ "cgroup", "PATH", OPT_TEXT, &opts.cgroup, .wants = "a cgroup v2 directory",
	  .help = "count only processes (and segments written by processes) in that cgroup v2\n"
	          "directory or below it",
	  .doc = "count only the fires of processes in the cgroup v2 at PATH or below it (an absolute "
	         "path of a directory on a cgroup2 mount, as this host sees it: "
	         "`/sys/fs/cgroup/system.slice/billingd.service`; checked in the BPF programs at each "
	         "fire), and sum only the segments whose writer is there: a copy of the binary run by "
	         "another service, or a segment another service writes into the same directory, adds "
	         "nothing ([Counting one cgroup](#counting-one-cgroup), "
	         "[security.md](security.md#billing-exporter)). With `--uid`, both must hold. A path "
	         "that is not absolute, does not exist or is not on a cgroup2 file system is one line "
	         "and exit 2; a host that mounts only cgroup v1 hierarchies is refused so (`a cgroup "
	         "v1 hierarchy; --cgroup needs cgroup v2`): mount cgroup2 (`mount -t cgroup2 none "
	         "DIR`; a hybrid host has it at `/sys/fs/cgroup/unified`) and name the service's "
	         "cgroup there" },
	{ "metrics", "GROUPS", OPT_PARSED, &opts.groups, .parse = parse_groups, .init = groups_default,
	  .help = groups_help,
	  .doc = "the metric groups to count: a comma list of the groups of the [metric "
	         "table](#metrics), or `all`" },
	{ "listen", "ADDR:PORT", OPT_PARSED, &opts.listen, .parse = parse_listen,
	  .given = &opts.listen_given, .init = BX_DEFAULT_ADDRESS ":" BX_TEXT(BX_DEFAULT_PORT),
	  .wants = "ADDR:PORT or [IPv6]:PORT",
	  .help = "serve /metrics there ([IPv6]:PORT; port 0: any free port)",
	  .doc = "serve `/metrics` there; an IPv6 address in brackets (`[::1]:9477`, `[::]:9477`); port "
	         "0 picks a free one (printed). An address other than loopback is refused without TLS "
	         "(`--web-config`)" },
	{ "web-config", "FILE", OPT_TEXT, &opts.web_config, .wants = "a file",
	  .help = "TLS and basic auth, exporter-toolkit's web config YAML (docs/security.md)",
	  .doc = "TLS, client certificates and basic auth for `/metrics`, in the YAML of Prometheus "
	         "exporter-toolkit's web config ([security.md](security.md#exposing-metrics))" },
	{ "listen-insecure", NULL, OPT_FLAG, &opts.listen_insecure,
	  .help = "allow a non-loopback --listen without TLS (anyone reaching it reads /metrics)",
	  .doc = "serve a non-loopback `--listen` in plain HTTP anyway: anyone who reaches the port "
	         "reads revenue per currency" },
	{ "web-max-connections", "N", OPT_UINT, &opts.limits.max_connections, .imin = 1, .imax = 1000000,
	  .init = BX_TEXT(BX_DEFAULT_MAX_CONNECTIONS), .help = "HTTP clients at once",
	  .doc = "HTTP clients at once, all together (fewer if the open-files limit leaves less room: "
	         "the start-up line says how many)" },
	{ "web-max-connections-per-ip", "N", OPT_UINT, &opts.limits.max_per_ip, .imin = 1,
	  .imax = 1000000, .init = BX_TEXT(BX_DEFAULT_MAX_PER_IP),
	  .help = "from one remote address or local user",
	  .doc = "HTTP clients at once from one peer: a remote address, or a local user whichever of "
	         "the host's addresses it connects from (the last eighth of the total is kept for "
	         "peers holding few, such as a health check: "
	         "[security.md](security.md#what-the-http-side-trusts-and-why))" },
	{ "web-request-timeout", "N", OPT_UINT, &opts.limits.request_seconds, .imin = 1, .imax = 3600,
	  .init = BX_TEXT(BX_DEFAULT_REQUEST_SECONDS), .help = "seconds a request may take",
	  .doc = "seconds from a connection (or its previous response) to the response, however "
	         "slowly a client sends; the connection is closed after" },
	{ "idle-detach", "N", OPT_UINT, &opts.idle_detach_s, .imin = 1, .imax = 86400,
	  .init = BX_TEXT(BX_IDLE_DETACH_S),
	  .help = "detach a --binary program file no process has run for N seconds",
	  .doc = "seconds after which a `--binary` program file that no process runs any more is "
	         "detached ([What `--binary` counts](#what---binary-counts))" },
	{ "once", NULL, OPT_FLAG, &opts.once,
	  .help = "print one snapshot after --interval seconds (5 without it) and exit",
	  .doc = "print a snapshot (the same samples as `/metrics`, buckets left out) after "
	         "`--interval` seconds (5 without it) and exit. No HTTP server unless `--listen` is "
	         "given" },
	{ "interval", "N", OPT_UINT, &opts.interval, .imin = 1, .imax = 86400,
	  .help = "print a snapshot every N seconds",
	  .doc = "print a snapshot every N seconds. No HTTP server unless `--listen` is given" },
	{ "format", "F", OPT_PARSED, &opts.format, .parse = parse_format, .init = "table",
	  .wants = "table or json",
	  .help = "snapshot format: table or json (one JSON object per line)" },
	{ "bpf-stats", NULL, OPT_FLAG, &opts.bpf_stats,
	  .help = "turn on the kernel's BPF run-time statistics while running",
	  .doc = "turn on the kernel's BPF run-time statistics while running (they cost a few ns per "
	         "fire), for `billing_exporter_bpf_program_*`" },
	{ "print-metric-table", NULL, OPT_FLAG, &opts.print_metric_table,
	  .help = "print the metric table (markdown) and exit",
	  .doc = "print the [metric table](#metrics) (markdown) and exit" },
	{ "check-table", NULL, OPT_FLAG, &opts.check_table,
	  .help = "check the metric table against billing.d's catalogue and exit" },
	{ "verbose", NULL, OPT_FLAG, &opts.verbose, .help = "show libbpf's messages" },
};

static const opt_table_t exporter_table = {
	.prog = "billing-exporter",
	.usage = "(--pid PID | --binary PATH | --stats-dir DIR)... [options]",
	.options = exporter_options,
	.n = sizeof exporter_options / sizeof exporter_options[0],
	.report = say_escaped,
};

int bx_command_line_parse(bx_opts_t *o, int argc, char **argv)
{
	memset(&opts, 0, sizeof opts);
	opts.only_uid = -1;
	describe_groups();
	int rc = opt_parse(&exporter_table, argc, argv);
	*o = opts;
	if (rc != OPT_RUN || o->print_metric_table || o->check_table)
		return rc;
	if (o->pid_count + o->binary_count + o->stats_dir_count == 0) {
		bx_error("no target: give --pid PID, --binary PATH or --stats-dir DIR");
		return OPT_REFUSED;
	}
	if (o->once && o->interval == 0)
		o->interval = 5;
	return OPT_RUN;
}
